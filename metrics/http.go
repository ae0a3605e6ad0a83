package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redlockd/redlockd/quorum"
)

// healthKey is the key a readiness check reads on every backend. Reading
// an absent key changes nothing and costs one round trip.
const healthKey = "redlockd:health"

// Health answers "can a majority of the backends be reached?", from a
// recent enough check or by running one (a read of one key on every
// backend, under the node timeout). The checks also feed the backend
// gauges, so that they stay current when no client sends anything.
type Health struct {
	cluster *quorum.Cluster
	maxAge  time.Duration

	mu       sync.Mutex
	at       time.Time
	answered int
}

// NewHealth checks cluster; a result younger than maxAge is reused, so
// that frequent probes do not multiply backend traffic. maxAge <= 0 means 1s.
func NewHealth(cluster *quorum.Cluster, maxAge time.Duration) *Health {
	if maxAge <= 0 {
		maxAge = time.Second
	}
	return &Health{cluster: cluster, maxAge: maxAge}
}

// Ready reports how many backends answered and whether they are a quorum.
func (h *Health) Ready(ctx context.Context) (answered, quorum int, ok bool) {
	q := h.cluster.Quorum()
	h.mu.Lock()
	defer h.mu.Unlock() // concurrent probes share one check
	if time.Since(h.at) >= h.maxAge {
		h.answered = h.cluster.Inspect(ctx, healthKey).Answered
		h.at = time.Now()
	}
	return h.answered, q, h.answered >= q
}

// Run checks every interval until ctx is done.
func (h *Health) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		h.Ready(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Handler serves /metrics from m, /healthz (200 while the process serves
// HTTP at all) and /readyz (200 when a majority of backends answer, 503
// otherwise). A nil h makes /readyz always ready.
func Handler(m *Metrics, h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if h == nil {
			fmt.Fprintln(w, "ok")
			return
		}
		answered, q, ok := h.Ready(r.Context())
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "%d backends answered, quorum %d\n", answered, q)
	})
	return mux
}
