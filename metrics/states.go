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
	states := m.states()
	if m.statesFn == nil {
		return 0, 0, true
	}
	for _, st := range states {
		if st.Up && st.Refused == "" && !st.Quarantined {
			answered++
		}
	}
	q = quorum.Quorum(len(states))
	return answered, q, answered >= q
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
// scrape time from the record.
type stateCollector struct {
	m                               *Metrics
	up, quarantined, quarantineLeft *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.quarantined
	ch <- c.quarantineLeft
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.m.states() {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, b2f(st.Up), st.Name)
		ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, b2f(st.Quarantined), st.Name)
		var left float64
		if st.Quarantined {
			left = max(time.Until(st.QuarantinedUntil).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.quarantineLeft, prometheus.GaugeValue, left, st.Name)
		c.collectShards(ch, st)
	}
}
