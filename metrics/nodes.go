package metrics

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/internal/oneline"
)

// state is a backend's health as last observed.
type state int

const (
	stateUnknown state = iota
	stateUp
	stateDown
)

func (s state) String() string {
	return [...]string{"unknown", "up", "down"}[s]
}

// nodeStats is one backend's running figures, for INFO and the logs.
type nodeStats struct {
	// up and seconds are this backend's series, looked up once rather
	// than by label on every call.
	up      prometheus.Gauge
	seconds sync.Map // op -> prometheus.Observer

	mu      sync.Mutex
	state   state
	since   time.Time
	calls   int64
	errors  int64
	busy    time.Duration // summed call time
	lastErr string
}

type nodeTable struct {
	fast  sync.Map   // name -> *nodeStats, read without the lock
	mu    sync.Mutex // serialises creation; guards order
	order []string
}

// node returns name's figures, creating them (and zeroed gauges) on first use.
func (m *Metrics) node(name string) *nodeStats {
	if n, ok := m.nodes.fast.Load(name); ok {
		return n.(*nodeStats)
	}
	t := &m.nodes
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.fast.Load(name); ok {
		return n.(*nodeStats)
	}
	n := &nodeStats{since: time.Now(), up: m.up.WithLabelValues(name)}
	t.order = append(t.order, name)
	t.fast.Store(name, n)
	n.up.Set(0)
	// Zero series from the start, so that rate() and alerts see a change
	// from 0 rather than a series appearing out of nowhere.
	for _, k := range []string{"timeout", "refused", "other"} {
		m.nodeErrors.WithLabelValues(name, k)
	}
	for _, st := range []string{"up", "down"} {
		m.nodeChanges.WithLabelValues(name, st)
	}
	return n
}

// NodeDone implements quorum.Observer.
func (m *Metrics) NodeDone(node, op string, d time.Duration, err error) {
	n := m.node(node)
	n.observer(m, node, op).Observe(d.Seconds())
	kind := ""
	if err != nil {
		kind = ErrorKind(err)
		m.nodeErrors.WithLabelValues(node, kind).Inc()
	}
	answered := err == nil || isReply(kind)
	n.mu.Lock()
	n.calls++
	n.busy += d
	if err != nil {
		n.errors++
		n.lastErr = oneline.Of(err.Error())
	}
	if kind == "canceled" {
		// A caller that went away says nothing about the backend.
		n.mu.Unlock()
		return
	}
	changed := n.transition(answered)
	n.up.Set(b2f(answered)) // under n.mu: in order
	n.mu.Unlock()
	if changed {
		m.logChange(node, answered, err)
	}
}

// observer is the latency series of this backend for op.
func (n *nodeStats) observer(m *Metrics, node, op string) prometheus.Observer {
	if o, ok := n.seconds.Load(op); ok {
		return o.(prometheus.Observer)
	}
	o, _ := n.seconds.LoadOrStore(op, m.nodeSeconds.WithLabelValues(node, op))
	return o.(prometheus.Observer)
}

// transition records the new state and reports whether it changed. The
// first answer of a backend counts as a change only when it is a failure:
// "up" at start-up is the expected state, not news.
func (n *nodeStats) transition(answered bool) bool {
	next := stateDown
	if answered {
		next = stateUp
	}
	if n.state == next {
		return false
	}
	prev := n.state
	n.state, n.since = next, time.Now()
	return prev != stateUnknown || next == stateDown
}

func (m *Metrics) logChange(node string, up bool, err error) {
	if up {
		m.nodeChanges.WithLabelValues(node, "up").Inc()
		m.log.Info("backend up", "backend", node)
		return
	}
	m.nodeChanges.WithLabelValues(node, "down").Inc()
	m.log.Warn("backend down", "backend", node, "err", err)
}

// quarantineCollector reports redlockd_backend_quarantined at scrape time
// from the cluster's own record, which decides the votes (and logs the
// changes); nothing is copied that could drift from it.
type quarantineCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func (c *quarantineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *quarantineCollector) Collect(ch chan<- prometheus.Metric) {
	q := c.m.quarantinedNow()
	for _, name := range c.m.nodeNames() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, b2f(q[name]), name)
	}
}

func (m *Metrics) quarantinedNow() map[string]bool {
	if m.quarantinedFn == nil {
		return nil
	}
	return m.quarantinedFn()
}

func (m *Metrics) nodeNames() []string {
	m.nodes.mu.Lock()
	defer m.nodes.mu.Unlock()
	return append([]string(nil), m.nodes.order...)
}

// redisClasses are the error codes of Redis replies that get their own
// label; any other reply is "redis_other", keeping the label set bounded.
var redisClasses = map[string]bool{
	"ERR": true, "OOM": true, "READONLY": true, "LOADING": true, "MISCONF": true,
	"BUSY": true, "NOAUTH": true, "WRONGPASS": true, "NOPERM": true, "NOSCRIPT": true,
	"MASTERDOWN": true, "CLUSTERDOWN": true, "TRYAGAIN": true,
}

// ErrorKind classifies a backend call's error for the errors_total label:
// "timeout", "refused", a Redis error class ("OOM", "READONLY", "LOADING",
// … or "redis_other"), "canceled" or "other".
func ErrorKind(err error) string {
	var se backend.ServerError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		if redisClasses[se.Code] {
			return se.Code
		}
		return "redis_other"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "other"
}

// isReply reports whether a kind means the server itself answered.
func isReply(kind string) bool {
	return kind == "redis_other" || redisClasses[kind]
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
