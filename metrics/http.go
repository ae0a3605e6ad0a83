package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics from m, /healthz (200 while the process serves
// HTTP at all), /readyz (200 when a majority of backends answered the
// last look at their server and may vote, 503 otherwise; see Ready),
// /readyz/backends (every backend votes) and the status page at /. All
// read the cluster's record as it is now: they send nothing to the
// backends.
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
	mux.HandleFunc("/readyz/backends", m.serveBackendsReady)
	mux.HandleFunc("/{$}", m.serveStatus)
	return mux
}

// serveBackendsReady is /readyz/backends: 200 when every backend (or,
// with ?backend=name, that one) votes now, 503 while one is down,
// quarantined or refused. It tells an operator draining Redis machines
// when taking the next backend away leaves as many votes as the last:
// a restarted backend answers at once but votes only after its
// quarantine. Each line of the body is one backend and why it does not
// vote.
func (m *Metrics) serveBackendsReady(w http.ResponseWriter, r *http.Request) {
	m.Refresh()
	want := r.URL.Query().Get("backend")
	var lines []string
	ok, found := true, false
	for _, st := range m.states() {
		if want != "" && st.Name != want {
			continue
		}
		found = true
		state := statusOf(st)
		if !votes(st) {
			ok = false
		}
		lines = append(lines, st.Name+" "+state.word+state.detail)
	}
	switch {
	case want != "" && !found:
		http.Error(w, "no backend "+want, http.StatusNotFound)
		return
	case !ok:
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
