package metrics

import (
	"time"

	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockd/redlockd/quorum"
)

// The backends' up/down state is not kept here: it is read from the
// cluster's record (Options.NodeStates), which one watcher per backend
// feeds and which decides the votes. The gauges, /readyz and the state
// change log lines are views of it, so they cannot disagree.

// states returns the cluster's record, or nil without one.
func (m *Metrics) states() []quorum.NodeState {
	if m.statesFn == nil {
		return nil
	}
	return m.statesFn()
}

// lookState is what the last look at a backend's server found; unknown
// before the first look.
func lookState(st quorum.NodeState) state {
	switch {
	case st.Up:
		return stateUp
	case st.LastError != "":
		return stateDown
	}
	return stateUnknown
}

// Ready reports how many backends answered the last look and may vote
// (neither refused nor quarantined), the quorum, and whether they reach
// it. Without a record every backend is taken as ready.
func (m *Metrics) Ready() (answered, q int, ok bool) {
	m.Refresh()
	if m.statesFn == nil {
		return 0, 0, true
	}
	answered, q = m.voting()
	return answered, q, answered >= q
}

// votes reports whether a backend's votes count now.
func votes(st quorum.NodeState) bool { return st.Up && st.Refused == "" && !st.Quarantined }

// voting counts the backends whose votes count now, and the quorum.
func (m *Metrics) voting() (n, q int) {
	states := m.states()
	for _, st := range states {
		if votes(st) {
			n++
		}
	}
	return n, quorum.Quorum(len(states))
}

// quorum is the quorum of the recorded backends; 0 without a record.
func (m *Metrics) quorum() int {
	if m.statesFn == nil {
		return 0
	}
	return quorum.Quorum(len(m.states()))
}

// seenStates is the state last logged per backend.
type seenStates struct {
	mu   sync.Mutex
	last map[string]state
}

// Refresh logs and counts each backend's change of state since the last
// Refresh, as the record shows it. The first look at a backend is news
// only when it failed: "up" at start-up is the expected state.
func (m *Metrics) Refresh() {
	states := m.states()
	s := &m.seen
	s.mu.Lock()
	defer s.mu.Unlock() // held while logging: the lines come out in order
	if s.last == nil {
		s.last = map[string]state{}
	}
	for _, st := range states {
		next, prev := lookState(st), s.last[st.Name]
		if next == prev || next == stateUnknown {
			continue
		}
		s.last[st.Name] = next
		if prev == stateUnknown && next == stateUp {
			continue
		}
		m.logChange(st, next == stateUp)
	}
}

func (m *Metrics) logChange(st quorum.NodeState, up bool) {
	if up {
		m.nodeChanges.WithLabelValues(st.Name, "up").Inc()
		m.log.Info("backend up", "backend", st.Name)
		return
	}
	m.nodeChanges.WithLabelValues(st.Name, "down").Inc()
	m.log.Warn("backend down", "backend", st.Name, "err", st.LastError)
}

// stateCollector reports redlockd_backend_up,
// redlockd_backend_quarantined and redlockd_backend_quarantine_seconds at
// scrape time from the record: one series per backend, labelled backend,
// and one per shard of a Redis Cluster backend, labelled backend and shard.
type stateCollector struct {
	m            *Metrics
	node, shards gauges
}

// gauges are the descriptors of a backend's state gauges for one set of
// label names.
type gauges struct{ up, quarantined, quarantineLeft *prometheus.Desc }

func newGauges(labels ...string) gauges {
	return gauges{
		up: prometheus.NewDesc(NameBackendUp,
			"1 when the last look at the backend's server got an answer, 0 when it failed.", labels, nil),
		quarantined: prometheus.NewDesc(NameBackendQuarantine,
			"1 while a restarted backend sits out every vote.", labels, nil),
		quarantineLeft: prometheus.NewDesc(NameQuarantineLeft,
			"Seconds left of a restarted backend's quarantine (0 when its votes count); under auto, the bound known so far until the other backends' lock horizons are read.",
			labels, nil),
	}
}

// emit reports one backend's or shard's gauges under the label values lv.
func (g gauges) emit(ch chan<- prometheus.Metric, up, quarantined bool, until time.Time, lv ...string) {
	ch <- prometheus.MustNewConstMetric(g.up, prometheus.GaugeValue, b2f(up), lv...)
	ch <- prometheus.MustNewConstMetric(g.quarantined, prometheus.GaugeValue, b2f(quarantined), lv...)
	var left float64
	if quarantined {
		left = max(time.Until(until).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(g.quarantineLeft, prometheus.GaugeValue, left, lv...)
}

// Describe sends the node descriptors only: the shard ones share their
// names with other label names, which a registry refuses at registration
// but accepts in what a collector collects (the shard series then go
// unchecked, as from an unchecked collector).
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.node.up
	ch <- c.node.quarantined
	ch <- c.node.quarantineLeft
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.m.states() {
		c.node.emit(ch, st.Up, st.Quarantined, st.QuarantinedUntil, st.Name)
		c.collectShards(ch, st)
	}
}
