package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/quorum"
)

// healthInterval is how often the backends are checked while idle, so that
// up/down gauges, logs and /readyz stay current without client traffic.
const healthInterval = 5 * time.Second

// newMetrics builds the registry. It exists even without --metrics-addr:
// INFO shows the same figures and the up/down log lines come from it. The
// handler is read through h at scrape time, as it is built after the
// cluster that reports here.
func newMetrics(nodes []quorum.Node, cluster **quorum.Cluster, h **commands.Handler, log *slog.Logger) *metrics.Metrics {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name()
	}
	return metrics.New(metrics.Options{
		Backends: names, Version: Version, Logger: log,
		Clients: func() int64 { return (*h).Clients() },
		Keepalive: func() (int64, int64) {
			ka := (*h).KeepaliveStats()
			return ka.Held, ka.Lost
		},
		Quarantined: func() map[string]bool {
			q := map[string]bool{}
			for _, st := range (*cluster).NodeStates() {
				q[st.Name] = st.Quarantined
			}
			return q
		},
	})
}

// serveMetrics starts the periodic backend check and, with --metrics-addr,
// the HTTP server of /metrics, /healthz and /readyz. The returned stop ends
// both; it waits for the HTTP server's open requests for up to timeout.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, cluster *quorum.Cluster, log *slog.Logger) (stop func(), err error) {
	health := metrics.NewHealth(cluster, time.Second)
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	checked := make(chan struct{})
	go func() { defer close(checked); health.Run(hctx, healthInterval) }()
	if addr == "" {
		return func() { cancel(); <-checked }, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		cancel()
		<-checked
		return nil, err
	}
	srv := &http.Server{Handler: metrics.Handler(m, health), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	return func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		<-served
		cancel()
		<-checked
	}, nil
}
