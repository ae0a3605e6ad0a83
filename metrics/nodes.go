package metrics

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockd/redlockd/internal/oneline"
	"github.com/redlockd/redlockd/quorum"
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
// Every reply updates them, from every backend reader and client at once,
// so the counters are atomics and the mutex is taken only when the link
// changes state or a call failed.
type nodeStats struct {
	// errs are this backend's error series, resolved once rather than by
	// label on every failure.
	errs handles[string, prometheus.Counter] // error kind -> counter

	calls  atomic.Int64
	errors atomic.Int64
	busy   atomic.Int64 // summed call time, in nanoseconds
	link   atomic.Int32 // a state; written only under mu

	mu      sync.Mutex // guards since and lastErr, and orders link's changes
	since   time.Time  // when link last changed
	lastErr string
}

type nodeTable struct {
	fast  handles[string, *nodeStats] // read without the lock
	mu    sync.Mutex                  // serialises creation; guards order and ncols
	order []string

	// calls finds a reply's backend figures and latency series in one
	// lookup: the way to them when indexed has not got them.
	calls handles[labelPair, nodeCall] // (backend, op) -> both

	// indexed holds the backends by their index in the cluster's
	// configuration order, each with its calls by operation column, so
	// that a round's replies find theirs without a lookup per reply.
	// Read without the lock; replaced by a longer copy under mu.
	indexed atomic.Pointer[[]*indexedNode]
	// columns numbers the operations, in the order first reported, up
	// to opColumns; an operation past them has -1.
	columns handles[string, int]
	ncols   int
}

// opColumns is how many operations get a column of their own in
// indexedNode: more than quorum has.
const opColumns = 16

// maxIndexed bounds the indexes that indexed holds; a backend past it
// goes by the (backend, op) map.
const maxIndexed = 1024

// indexedNode is the backend at one index, and its calls by operation
// column, each resolved on its first report.
type indexedNode struct {
	name string
	ops  [opColumns]atomic.Pointer[nodeCall]
}

// nodeCall is what a reply of one backend within one operation updates.
type nodeCall struct {
	n       *nodeStats
	seconds prometheus.Observer
}

// node returns name's figures, creating them (and zeroed gauges) on first use.
func (m *Metrics) node(name string) *nodeStats {
	if n, ok := m.nodes.fast.load(name); ok {
		return n
	}
	t := &m.nodes
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.fast.load(name); ok {
		return n
	}
	n := &nodeStats{since: time.Now()}
	t.order = append(t.order, name)
	t.fast.loadOrStore(name, n)
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

// NodesDone implements quorum.Observer. A call finds its backend's
// figures and series by the backend's index, where that index holds the
// same name, and else by name.
func (m *Metrics) NodesDone(op string, calls []quorum.NodeResult) {
	debug := m.debugging()
	col := m.nodes.column(op)
	var indexed []*indexedNode
	if p := m.nodes.indexed.Load(); p != nil {
		indexed = *p
	}
	for i := range calls {
		r := &calls[i]
		var c nodeCall
		if p := indexedCall(indexed, r.Index, r.Node, col); p != nil {
			c = *p
		} else {
			c = m.resolveCall(r.Index, r.Node, op, col)
		}
		m.nodeDone(c, op, r, debug)
	}
}

// indexedCall is the call of the backend at index i, named node, in
// operation column col, if indexed has it; nil otherwise.
func indexedCall(indexed []*indexedNode, i int, node string, col int) *nodeCall {
	if col < 0 || i < 0 || i >= len(indexed) {
		return nil
	}
	if x := indexed[i]; x != nil && x.name == node {
		return x.ops[col].Load()
	}
	return nil
}

// resolveCall is the call of node within op by the (backend, op) map,
// entered at index i in column col for the next reports where the index
// is node's.
func (m *Metrics) resolveCall(i int, node, op string, col int) nodeCall {
	c, ok := m.nodes.calls.load(labelPair{node, op})
	if !ok {
		c = m.nodeCall(node, op)
	}
	if col >= 0 {
		if x := m.nodes.index(i, node); x != nil && x.ops[col].Load() == nil {
			p := c
			x.ops[col].CompareAndSwap(nil, &p)
		}
	}
	return c
}

// column is op's column in indexedNode.ops, numbered on first use; -1
// once opColumns are taken.
func (t *nodeTable) column(op string) int {
	if col, ok := t.columns.load(op); ok {
		return col
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if col, ok := t.columns.load(op); ok {
		return col
	}
	col := -1
	if t.ncols < opColumns {
		col = t.ncols
		t.ncols++
	}
	return t.columns.loadOrStore(op, col)
}

// index is the entry at i for the backend node, made if i has none; nil
// when i is out of bounds or is another backend's. Only the making takes
// the lock, once per index.
func (t *nodeTable) index(i int, node string) *indexedNode {
	if i < 0 || i >= maxIndexed {
		return nil
	}
	if x, ok := t.indexAt(i, node); ok {
		return x
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if x, ok := t.indexAt(i, node); ok {
		return x
	}
	var cur []*indexedNode
	if p := t.indexed.Load(); p != nil {
		cur = *p
	}
	next := make([]*indexedNode, max(len(cur), i+1))
	copy(next, cur)
	x := &indexedNode{name: node}
	next[i] = x
	t.indexed.Store(&next)
	return x
}

// indexAt is the entry at i if node's, or nil if another backend's;
// false when i has none yet.
func (t *nodeTable) indexAt(i int, node string) (*indexedNode, bool) {
	p := t.indexed.Load()
	if p == nil || i >= len(*p) || (*p)[i] == nil {
		return nil, false
	}
	if x := (*p)[i]; x.name == node {
		return x, true
	}
	return nil, true
}

// nodeDone records one call r within op to the backend of c; debug says
// whether it is logged.
func (m *Metrics) nodeDone(c nodeCall, op string, r *quorum.NodeResult, debug bool) {
	node, d, err := r.Node, r.D, r.Err
	n := c.n
	c.seconds.Observe(d.Seconds())
	n.busy.Add(int64(d))
	n.calls.Add(1)
	if debug {
		m.debugNode(node, op, d, err)
	}
	if err != nil {
		m.nodeFailed(n, node, err)
		return
	}
	if n.state() != stateUp { // the common case needs no lock
		n.mu.Lock()
		n.transition(true)
		n.mu.Unlock()
	}
}

// nodeFailed records a failed call to node.
func (m *Metrics) nodeFailed(n *nodeStats, node string, err error) {
	kind := ErrorKind(err)
	n.errorCounter(m, node, kind).Inc()
	n.errors.Add(1)
	msg := oneline.Of(err.Error())
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lastErr = msg
	if kind != "canceled" { // a caller that went away says nothing about the backend
		n.transition(isReply(kind))
	}
}

// nodeCall resolves node's figures and its latency series for op.
func (m *Metrics) nodeCall(node, op string) nodeCall {
	c := nodeCall{n: m.node(node), seconds: m.nodeSeconds.WithLabelValues(node, op)}
	return m.nodes.calls.loadOrStore(labelPair{node, op}, c)
}

// errorCounter is this backend's failed calls counter for kind.
func (n *nodeStats) errorCounter(m *Metrics, node, kind string) prometheus.Counter {
	if c, ok := n.errs.load(kind); ok {
		return c
	}
	return n.errs.loadOrStore(kind, m.nodeErrors.WithLabelValues(node, kind))
}

// state is what the last call found.
func (n *nodeStats) state() state { return state(n.link.Load()) }

// transition records the link's new state. The caller holds n.mu.
func (n *nodeStats) transition(answered bool) {
	next := stateDown
	if answered {
		next = stateUp
	}
	if n.state() != next {
		n.link.Store(int32(next))
		n.since = time.Now()
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
	var ne net.Error
	if code, ok := quorum.ReplyCode(err); ok {
		if redisClasses[code] {
			return code
		}
		return "redis_other"
	}
	switch {
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
