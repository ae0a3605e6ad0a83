package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // could not listen, or the server failed
	exitUsage  = 2 // bad flags, environment, config file or backends
)

const (
	shutdownTimeout = 10 * time.Second
	// startupCheckTimeout bounds the start-up look at each backend; it is
	// longer than the node timeout because it includes dialing.
	startupCheckTimeout = 2 * time.Second
)

// run is the whole program: it returns the exit code instead of exiting,
// so that tests can drive it.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, env)
	switch {
	case errors.Is(err, errHelp):
		printUsage(stdout)
		return exitOK
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "redlockd %s\n", Version)
		return exitOK
	case err == nil:
		err = checkListen(cfg.Listen)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	defer stopProfile()
	log := newLogger(cfg, stderr)
	backend.SetGoRedisLogger(log)
	nodes, err := openNodes(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "redlockd: %v\n", err)
		return exitUsage
	}
	defer closeNodes(nodes)
	return serve(ctx, cfg, nodes, log)
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated already
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve builds the lock service over nodes, serves clients until ctx ends,
// then shuts down gracefully.
func serve(ctx context.Context, cfg Config, nodes []quorum.Node, log *slog.Logger) int {
	qcfg := quorum.DefaultConfig()
	qcfg.NodeTimeout = cfg.NodeTimeout
	qcfg.DriftFactor = cfg.DriftFactor
	qcfg.RestartQuarantine = cfg.RestartQuarantine
	qcfg.MaxTTL = cfg.MaxTTL
	qcfg.Logger = log
	var cluster *quorum.Cluster
	var h *commands.Handler
	m := newMetrics(nodes, &cluster, &h, log)
	qcfg.Observer = m
	cluster, err := quorum.New(nodes, qcfg)
	if err != nil {
		log.Error("cannot build the lock cluster", "err", err)
		return exitUsage
	}
	defer cluster.Close() // after the last command, before the nodes close
	h = commands.New(cluster, commands.Options{
		Password: cfg.RequirePass, MaxTTL: cfg.MaxTTL, MaxWait: cfg.MaxWait, SessionTTL: cfg.SessionTTL,
		Version: Version, Logger: log, Observer: m, Info: m,
	})
	srv := proxy.New(h, proxyOptions(cfg, log))
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return exitFailed
	}
	if cfg.RequirePass == "" && exposed(ln.Addr()) {
		log.Warn("listening on a non-loopback address without --requirepass: anyone who reaches it can take and break locks", "addr", ln.Addr().String())
	}
	stopMetrics, err := serveMetrics(ctx, cfg.MetricsAddr, m, cluster, log)
	if err != nil {
		ln.Close()
		log.Error("cannot listen", "addr", cfg.MetricsAddr, "err", err)
		return exitFailed
	}
	defer stopMetrics()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("ready to accept connections", "addr", ln.Addr().String(), "tls", cfg.clientTLS != nil,
		"backends", len(nodes), "quorum", cluster.Quorum(), "version", Version)
	return waitAndShutdown(ctx, srv, served, log)
}

// proxyOptions maps the listener settings; the proxy spells "no limit" as
// a negative value, the flags as 0.
func proxyOptions(cfg Config, log *slog.Logger) proxy.Options {
	o := proxy.Options{
		Logger: log, TLSConfig: cfg.clientTLS, MaxClients: cfg.MaxClients,
		MaxRequestBytes: cfg.MaxRequestSize, IdleTimeout: cfg.IdleTimeout,
		MaxReplyBytes: cfg.ClientOutputLimit, WriteTimeout: cfg.ClientWriteTimeout,
	}
	if o.MaxReplyBytes == 0 {
		o.MaxReplyBytes = -1
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = -1
	}
	return o
}

func waitAndShutdown(ctx context.Context, srv *proxy.Server, served <-chan error, log *slog.Logger) int {
	select {
	case err := <-served:
		log.Error("server stopped", "err", err)
		return exitFailed
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight commands", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("in-flight commands did not finish in time; connections closed", "err", err)
	}
	<-served // every connection is cleaned up before the backends close
	log.Info("bye")
	return exitOK
}

// openNodes returns the embedded nodes, or one Redis node per backend. A
// backend that does not answer is logged, not fatal: a majority may be up.
func openNodes(ctx context.Context, cfg Config, log *slog.Logger) ([]quorum.Node, error) {
	if len(cfg.Backends) == 0 {
		log.Warn("embedded mode: no fault tolerance, for trying it out",
			"hint", "pass --backends host:port,host:port,host:port for real Redis masters")
		return []quorum.Node{
			backend.NewMemory("embedded-1"), backend.NewMemory("embedded-2"), backend.NewMemory("embedded-3"),
		}, nil
	}
	nodes := make([]quorum.Node, 0, len(cfg.Backends))
	for _, addr := range cfg.Backends {
		r, err := backend.NewRedis(addr, backend.RedisOptions{TLSConfig: cfg.backendTLS})
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("invalid --backends %q: %v", addr, err)
		}
		nodes = append(nodes, r)
	}
	if err := checkBackends(ctx, nodes, log); err != nil {
		closeNodes(nodes)
		return nil, err
	}
	return nodes, nil
}

func closeNodes(nodes []quorum.Node) {
	for _, n := range nodes {
		n.Close()
	}
}

// backendInfo is what start-up learns about one backend.
type backendInfo struct {
	name, runID, role string
	replicas          int
	err               error
}

// checkBackends looks at every backend concurrently. Unreachable ones are
// logged; two addresses of one server, or a replica, are refused, since
// either would let one failure count twice in a vote.
func checkBackends(ctx context.Context, nodes []quorum.Node, log *slog.Logger) error {
	infos := probeAll(ctx, nodes)
	seen := map[string]string{}
	up := 0
	for _, in := range infos {
		if in.err != nil {
			log.Warn("backend unreachable at start-up; it votes no until it answers", "backend", in.name, "err", in.err)
			continue
		}
		up++
		if other, dup := seen[in.runID]; dup {
			return fmt.Errorf("invalid --backends: %s and %s are the same server (run_id %s)", other, in.name, in.runID)
		}
		seen[in.runID] = in.name
		if in.role != "master" {
			return fmt.Errorf("invalid --backends: %s is a %s, not an independent master", in.name, in.role)
		}
		if in.replicas > 0 {
			log.Warn("backend has replicas attached; Redlock needs no replication", "backend", in.name, "replicas", in.replicas)
		}
	}
	if q := quorum.Quorum(len(nodes)); up < q {
		log.Warn("fewer backends than a quorum answered at start-up; locks fail until enough come up", "up", up, "quorum", q)
	}
	return nil
}

func probeAll(ctx context.Context, nodes []quorum.Node) []backendInfo {
	ctx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	infos := make([]backendInfo, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { infos[i] = probe(ctx, n) })
	}
	wg.Wait()
	return infos
}

func probe(ctx context.Context, n quorum.Node) backendInfo {
	in := backendInfo{name: n.Name()}
	r, ok := n.(*backend.Redis)
	if !ok {
		in.role = "master"
		return in
	}
	if in.runID, in.err = r.RunID(ctx); in.err != nil {
		return in
	}
	in.role, in.replicas, in.err = r.Role(ctx)
	return in
}
