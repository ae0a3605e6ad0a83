package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/quorum"
)

// refreshInterval is how often the backends' state changes are logged and
// counted while nothing scrapes: the watchers look at the servers every
// second, and this only reads what they found.
const refreshInterval = time.Second

// newMetrics builds the registry before the cluster and handler that
// report to it exist. Its gauges read them through r at scrape time: r's
// parts are set once, in New, before anything can scrape.
func newMetrics(r *Redlockd) *metrics.Metrics {
	names := make([]string, len(r.nodes))
	for i, n := range r.nodes {
		names[i] = n.Name()
	}
	return metrics.New(metrics.Options{
		Backends: names, Version: r.cfg.Version, Logger: r.cfg.Logger,
		Clients: func() int64 { return r.handler.Clients() },
		Keepalive: func() (int64, int64) {
			ka := r.handler.KeepaliveStats()
			return ka.Held, ka.Lost
		},
		NodeStates: func() []quorum.NodeState { return r.cluster.NodeStates() },
		Waiting:    func() int64 { return r.handler.Blocked() },
	})
}

// serveMetrics starts the periodic refresh of the backends' state changes
// and, with addr, the HTTP server of /metrics, /healthz and /readyz. The
// returned stop ends both; it waits for the HTTP server's open requests
// for up to 5s.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	hctx, cancel := context.WithCancel(context.Background())
	checked := make(chan struct{})
	go func() { defer close(checked); refreshEvery(hctx, m, refreshInterval) }()
	stopHealth := func() { cancel(); <-checked }
	if addr == "" {
		return stopHealth, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		stopHealth()
		return nil, err
	}
	srv := &http.Server{Handler: metrics.Handler(m), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "paths", "/ (status page) /metrics /healthz /readyz /readyz/backends")
	return func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		<-served
		stopHealth()
	}, nil
}

// refreshEvery refreshes m every interval until ctx is done.
func refreshEvery(ctx context.Context, m *metrics.Metrics, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		m.Refresh()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
