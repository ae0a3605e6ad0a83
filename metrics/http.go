package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics from m, /healthz (200 while the process serves
// HTTP at all) and /readyz (200 when a majority of backends answered the
// last look at their server and may vote, 503 otherwise; see Ready). Both
// /metrics and /readyz read the cluster's record as it is now: they send
// nothing to the backends.
func Handler(m *Metrics) http.Handler {
	mux := http.NewServeMux()
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		m.Refresh() // the change counters are current with the gauges
		prom.ServeHTTP(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		answered, q, ok := m.Ready()
		if m.statesFn == nil {
			fmt.Fprintln(w, "ok")
			return
		}
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "%d backends answered, quorum %d\n", answered, q)
	})
	return mux
}
