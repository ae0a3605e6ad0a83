// Package gcpace sets the garbage collector's pace for a server whose live
// heap is small and whose allocation rate is high: every request allocates
// a little and keeps none of it. With Go's default (GOGC=100) such a heap
// is collected each time it doubles, many times a second under load, and
// marking, sweeping and regrowing goroutine stacks that each collection
// shrank cost a large share of the CPU.
//
// After every collection the pace is set so that the next one comes when
// the heap has grown by max(live heap, Headroom): the default's doubling
// once the live heap is Headroom or more, a fixed allowance below it. The
// heap therefore never exceeds max(2 × live, live + Headroom), so what it
// adds to memory is bounded by Headroom.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Headroom is the heap growth allowed between two collections while the
// live heap is smaller than it.
const Headroom = 64 << 20

// maxPercent bounds the pace for a nearly empty heap.
const maxPercent = 2000

var once sync.Once

// Start paces the collector from now on, for the life of the process. It
// does nothing when the operator chose a pace (GOGC set in the
// environment), and nothing on later calls.
func Start() {
	if os.Getenv("GOGC") != "" {
		return
	}
	once.Do(func() {
		p := &pacer{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, last: 100}
		p.arm()
	})
}

// pacer re-reads the live heap after each collection. Its fields are used
// by the finalizer goroutine only.
type pacer struct {
	sample []metrics.Sample
	last   int
}

// sentinel is garbage as soon as it is made; its finalizer runs after the
// collection that found it, and makes the next one.
type sentinel struct{ p *pacer }

func (p *pacer) arm() {
	runtime.SetFinalizer(&sentinel{p}, func(s *sentinel) {
		s.p.adjust()
		s.p.arm()
	})
}

func (p *pacer) adjust() {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	pct := Percent(p.sample[0].Value.Uint64())
	if pct != p.last {
		debug.SetGCPercent(pct)
		p.last = pct
	}
}

// Percent is the GOGC that lets a heap of live bytes grow by
// max(live, Headroom) before the next collection, rounded down to a
// multiple of 10 (so that small changes of the live heap do not reset it
// after every collection) and at most maxPercent.
func Percent(live uint64) int {
	if live >= Headroom {
		return 100
	}
	if live < Headroom*100/maxPercent {
		return maxPercent
	}
	return int(Headroom*100/live) / 10 * 10
}
