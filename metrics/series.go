package metrics

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// handles maps a small, bounded set of keys (backend names, operation
// names, outcomes) to values resolved once, such as a labelled series.
// Reads are a plain map lookup without a lock or label hashing: the map is
// copied on each insert, which happens once per key for the process's
// life.
type handles[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serialises inserts
}

// load returns k's value, if one was stored.
func (h *handles[K, V]) load(k K) (V, bool) {
	if m := h.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// loadOrStore returns k's value, storing v first if k has none.
func (h *handles[K, V]) loadOrStore(k K, v V) V {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.m.Load()
	if old != nil {
		if got, ok := (*old)[k]; ok {
			return got
		}
	}
	next := map[K]V{}
	if old != nil {
		next = maps.Clone(*old)
	}
	next[k] = v
	h.m.Store(&next)
	return v
}

// labelPair is the two label values of a counter such as (op, outcome).
type labelPair struct{ a, b string }

// counterOf is v's counter for labels a and b, resolved once into h.
func counterOf(h *handles[labelPair, prometheus.Counter], v *prometheus.CounterVec, a, b string) prometheus.Counter {
	k := labelPair{a, b}
	if c, ok := h.load(k); ok {
		return c
	}
	return h.loadOrStore(k, v.WithLabelValues(a, b))
}

// observerOf is v's series for label value a, resolved once into h.
func observerOf(h *handles[string, prometheus.Observer], v *prometheus.HistogramVec, a string) prometheus.Observer {
	if o, ok := h.load(a); ok {
		return o
	}
	return h.loadOrStore(a, v.WithLabelValues(a))
}
