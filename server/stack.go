package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
)

// QuarantineAuto is the RestartQuarantine that lasts as long as the locks
// a restarted backend may have lost can live, as the other backends' lock
// horizons tell (quorum.QuarantineAuto).
const QuarantineAuto = quorum.QuarantineAuto

// QuarantineMaxTTL is the RestartQuarantine that follows MaxTTL: a
// restarted backend may have lost any lock it granted, and the longest
// one lives MaxTTL.
const QuarantineMaxTTL time.Duration = -2

// Config is one redlockd. Start from DefaultConfig: zero values are taken
// as they are (0 is "off" or "no limit" where a field says so, as on the
// flags).
type Config struct {
	// Backends are the Redis masters (host:port, redis://…, rediss://…),
	// opened and checked by New. None, and no Nodes: embedded mode, three
	// in-memory nodes. Default none.
	Backends []string
	// BackendTLS is the TLS configuration of rediss:// backends. Default nil.
	BackendTLS *tls.Config
	// Nodes, when set, are the nodes instead of Backends, not checked. The
	// stack owns them from New on and closes them. Default none.
	Nodes []quorum.Node
	// NodeTimeout bounds each call to one node. Default 50ms.
	NodeTimeout time.Duration
	// DriftFactor is the clock drift allowance, a fraction of the ttl.
	// Default 0.01.
	DriftFactor float64
	// MaxTTL is the largest ttl a command may ask for; the quorum retries
	// a release that does not know its ttl this long at most, and it caps
	// the lock horizon. Default 24h.
	MaxTTL time.Duration
	// RestartQuarantine is how long a restarted backend sits out every
	// vote: QuarantineAuto, QuarantineMaxTTL (as long as MaxTTL), a fixed
	// duration, or 0 (off). Default QuarantineAuto.
	RestartQuarantine time.Duration
	// MaxWait is the largest LOCK … WAIT. Default 1h.
	MaxWait time.Duration
	// SessionTTL is the backend ttl of session locks. Default 30s.
	SessionTTL time.Duration
	// Password, when set, must be given with AUTH. Default none.
	Password string
	// Version is reported by INFO, HELLO and the build-info metric.
	// Default "dev".
	Version string
	// MetricsAddr, when set, is where Serve serves /metrics, /healthz and
	// /readyz over HTTP. Default none.
	MetricsAddr string
	// Proxy are the listener's options; its Logger defaults to Logger.
	// Default: the binary's limits (10000 clients, 512 MiB requests, 64 MiB
	// of pending replies, 60s write timeout, no idle timeout).
	Proxy proxy.Options
	// Logger receives everything the parts log. Default slog.Default().
	Logger *slog.Logger
	// Tune, when set, adjusts the quorum's configuration last (tests: retry
	// jitter, a quarantine of their own). Default nil.
	Tune func(*quorum.Config)
	// RetryDelay is the longest random pause between two tries of a
	// blocking acquire; each pause is drawn between a tenth of it and it.
	// 0 keeps the quorum's own. Default 50ms.
	RetryDelay time.Duration
}

// DefaultConfig returns the documented defaults: those of the flags.
func DefaultConfig() Config {
	return Config{
		NodeTimeout:       50 * time.Millisecond,
		DriftFactor:       0.01,
		MaxTTL:            24 * time.Hour,
		RestartQuarantine: QuarantineAuto,
		MaxWait:           time.Hour,
		SessionTTL:        30 * time.Second,
		Version:           "dev",
		Proxy: proxy.Options{
			MaxClients: 10000, MaxRequestBytes: proxy.DefaultMaxRequestBytes,
			MaxReplyBytes: proxy.DefaultMaxReplyBytes, WriteTimeout: proxy.DefaultWriteTimeout,
			MaxPubSubBytes: proxy.DefaultMaxPubSubBytes,
		},
		Logger:     slog.Default(),
		RetryDelay: 50 * time.Millisecond,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.NodeTimeout <= 0 || c.MaxTTL <= 0 || c.MaxWait <= 0 || c.SessionTTL <= 0:
		return errors.New("stack: NodeTimeout, MaxTTL, MaxWait and SessionTTL must be positive")
	case c.RestartQuarantine < 0 && c.RestartQuarantine != QuarantineMaxTTL && c.RestartQuarantine != QuarantineAuto:
		return errors.New("stack: RestartQuarantine must be QuarantineAuto, QuarantineMaxTTL, 0 or positive")
	case len(c.Nodes) > 0 && len(c.Backends) > 0:
		return errors.New("stack: Nodes and Backends are exclusive")
	}
	return nil
}

// quorumConfig derives the quorum's settings.
func (c Config) quorumConfig(obs quorum.Observer) quorum.Config {
	q := quorum.DefaultConfig()
	q.NodeTimeout = c.NodeTimeout
	q.DriftFactor = c.DriftFactor
	q.MaxTTL = c.MaxTTL
	q.SessionTTL = c.SessionTTL
	q.RestartQuarantine = c.RestartQuarantine
	if c.RestartQuarantine == QuarantineMaxTTL {
		q.RestartQuarantine = c.MaxTTL
	}
	q.Logger = c.Logger
	q.Observer = obs
	if c.RetryDelay > 0 {
		q.RetryDelayMin, q.RetryDelayMax = c.RetryDelay/10, c.RetryDelay
	}
	if c.Tune != nil {
		c.Tune(&q)
	}
	return q
}

func (c Config) commandOptions(m *metrics.Metrics) commands.Options {
	return commands.Options{
		Password: c.Password, MaxTTL: c.MaxTTL, MaxWait: c.MaxWait, SessionTTL: c.SessionTTL,
		Version: c.Version, Logger: c.Logger, Observer: m, Info: m,
	}
}

// Redlockd is one assembled redlockd: Serve it on a listener, then
// Shutdown (or Close) it.
type Redlockd struct {
	cfg     Config
	nodes   []quorum.Node
	cluster *quorum.Cluster
	handler *commands.Handler
	server  *proxy.Server
	metrics *metrics.Metrics

	mu          sync.Mutex
	serving     chan struct{} // closed when Serve returns; nil before Serve
	released    bool          // Shutdown or Close began: Serve starts nothing
	stopMetrics func()
	closeOnce   sync.Once
}

// New builds a redlockd from cfg: it opens the backends, builds the
// cluster and checks the backends from its watchers' first looks (a
// backend that is down is logged, not fatal; two addresses of one server
// or a replica are an error), then builds the handler, server and
// metrics. It serves nothing until Serve.
func New(ctx context.Context, cfg Config) (*Redlockd, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Proxy.Logger == nil {
		cfg.Proxy.Logger = cfg.Logger
	}
	if err := cfg.Validate(); err != nil {
		closeNodes(cfg.Nodes)
		return nil, err
	}
	nodes, err := openNodes(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := &Redlockd{cfg: cfg, nodes: nodes}
	r.metrics = newMetrics(r)
	if err := r.buildCluster(ctx); err != nil {
		return nil, err
	}
	r.handler = commands.New(r.cluster, cfg.commandOptions(r.metrics))
	r.server = proxy.New(r.handler, cfg.Proxy)
	return r, nil
}

// buildCluster builds the cluster over r.nodes and, for Backends, checks
// them from the cluster's first looks: its log lines are held until the
// check passes. On failure the nodes are closed.
func (r *Redlockd) buildCluster(ctx context.Context) error {
	qc := r.cfg
	check := len(r.cfg.Backends) > 0
	var gate logGate
	if check {
		qc.Logger = gate.logger(r.cfg.Logger)
	}
	cluster, err := quorum.New(r.nodes, qc.quorumConfig(r.metrics))
	if err != nil {
		closeNodes(r.nodes)
		return fmt.Errorf("cannot build the lock cluster: %w", err)
	}
	if check {
		if err := checkBackends(ctx, cluster, r.cfg.Logger); err != nil {
			cluster.Close()
			closeNodes(r.nodes)
			return err
		}
		gate.open()
	}
	r.cluster = cluster
	return nil
}

// Nodes, Cluster, Handler, Server and Metrics are the parts, for the
// binary's log lines and for tests.
func (r *Redlockd) Nodes() []quorum.Node       { return r.nodes }
func (r *Redlockd) Cluster() *quorum.Cluster   { return r.cluster }
func (r *Redlockd) Handler() *commands.Handler { return r.handler }
func (r *Redlockd) Server() *proxy.Server      { return r.server }
func (r *Redlockd) Metrics() *metrics.Metrics  { return r.metrics }

// Serve starts the metrics (the periodic refresh of the backends' state
// changes, and the HTTP server with MetricsAddr), then serves clients on ln until Shutdown or
// Close, after which it returns proxy.ErrServerClosed. Call it once.
func (r *Redlockd) Serve(ln net.Listener) error {
	done := make(chan struct{})
	defer close(done)
	r.mu.Lock()
	switch {
	case r.released:
		r.mu.Unlock()
		ln.Close()
		return proxy.ErrServerClosed
	case r.serving != nil:
		r.mu.Unlock()
		ln.Close()
		return errors.New("stack: Serve called twice")
	}
	r.serving = done
	stop, err := serveMetrics(r.cfg.MetricsAddr, r.metrics, r.cfg.Logger)
	r.stopMetrics = stop
	r.mu.Unlock()
	if err != nil {
		ln.Close()
		return fmt.Errorf("cannot listen on %s: %w", r.cfg.MetricsAddr, err)
	}
	return r.server.Serve(ln)
}

// Ready is closed once Serve accepts connections.
func (r *Redlockd) Ready() <-chan struct{} { return r.server.Ready() }

// Shutdown stops accepting, lets in-flight commands finish until ctx is
// done (then closes the connections), and releases everything: metrics,
// cluster, nodes, in that order, once every connection is cleaned up.
// Safe to call twice.
func (r *Redlockd) Shutdown(ctx context.Context) error {
	err := r.server.Shutdown(ctx)
	r.release()
	return err
}

// Close is Shutdown without waiting for in-flight commands.
func (r *Redlockd) Close() error {
	err := r.server.Close()
	r.release()
	return err
}

func (r *Redlockd) release() {
	r.mu.Lock()
	serving := r.serving
	r.released = true
	r.mu.Unlock()
	if serving != nil {
		<-serving // every connection is cleaned up before the backends close
	}
	r.closeOnce.Do(func() {
		r.mu.Lock()
		stop := r.stopMetrics
		r.mu.Unlock()
		if stop != nil {
			stop()
		}
		r.cluster.Close()
		closeNodes(r.nodes)
	})
}
