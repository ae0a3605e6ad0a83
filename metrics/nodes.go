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

// state is what a backend's calls, or the looks at its server, last found.
type state int

const (
	stateUnknown state = iota
	stateUp
	stateDown
)

func (s state) String() string {
	return [...]string{"unknown", "up", "down"}[s]
}

// nodeStats is one backend's running figures from its calls, for INFO.
type nodeStats struct {
	// seconds are this backend's series, looked up once rather than by
	// label on every call.
	seconds sync.Map // op -> prometheus.Observer

	mu      sync.Mutex
	state   state // the link: what the last call found
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
	n := &nodeStats{since: time.Now()}
	t.order = append(t.order, name)
	t.fast.Store(name, n)
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
	if kind != "canceled" { // a caller that went away says nothing about the backend
		n.transition(answered)
	}
	n.mu.Unlock()
}

// observer is the latency series of this backend for op.
func (n *nodeStats) observer(m *Metrics, node, op string) prometheus.Observer {
	if o, ok := n.seconds.Load(op); ok {
		return o.(prometheus.Observer)
	}
	o, _ := n.seconds.LoadOrStore(op, m.nodeSeconds.WithLabelValues(node, op))
	return o.(prometheus.Observer)
}

// transition records the link's new state.
func (n *nodeStats) transition(answered bool) {
	next := stateDown
	if answered {
		next = stateUp
	}
	if n.state != next {
		n.state, n.since = next, time.Now()
	}
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
