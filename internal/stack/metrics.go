package stack

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

// healthInterval is how often the backends are checked while idle, so that
// up/down gauges, logs and /readyz stay current without client traffic.
const healthInterval = 5 * time.Second

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
		Quarantined: func() map[string]bool {
			q := map[string]bool{}
			for _, st := range r.cluster.NodeStates() {
				q[st.Name] = st.Quarantined
			}
			return q
		},
	})
}

// serveMetrics starts the periodic backend check and, with addr, the HTTP
// server of /metrics, /healthz and /readyz. The returned stop ends both;
// it waits for the HTTP server's open requests for up to 5s.
func serveMetrics(addr string, m *metrics.Metrics, cluster *quorum.Cluster, log *slog.Logger) (stop func(), err error) {
	health := metrics.NewHealth(cluster, time.Second)
	hctx, cancel := context.WithCancel(context.Background())
	checked := make(chan struct{})
	go func() { defer close(checked); health.Run(hctx, healthInterval) }()
	stopHealth := func() { cancel(); <-checked }
	if addr == "" {
		return stopHealth, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		stopHealth()
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
		stopHealth()
	}, nil
}
