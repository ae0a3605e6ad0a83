// Package gcpace sets the garbage collector's pace for a server whose live
// heap is small and whose allocation rate is high: every request allocates
// a little and keeps none of it. With Go's default (GOGC=100) such a heap
// is collected each time it doubles, many times a second under load, and
// marking, sweeping and regrowing goroutine stacks that each collection
// shrank cost a large share of the CPU.
//
// The runtime lets the heap grow, between two collections, by GOGC percent
// of its base: the live heap plus the goroutine stacks and globals it
// scans. After every collection the pace is set so that the next one
// comes when the heap has grown by max(base, Headroom): the default's
// growth once the base is Headroom or more, a fixed allowance below it. So
// the heap never exceeds live + max(base, Headroom), and what the pacing
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
		p := &pacer{sample: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
		}}
		p.arm()
	})
}

// pacer re-reads the heap's base after each collection. Its fields are
// used by the finalizer goroutine only.
type pacer struct {
	sample []metrics.Sample
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
	var base uint64
	for _, s := range p.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return // not known to this runtime: leave the pace alone
		}
		base += s.Value.Uint64()
	}
	debug.SetGCPercent(Percent(base))
}

// Percent is the GOGC that lets the heap grow by max(base, Headroom)
// before the next collection, base being what GOGC is a percentage of
// (live heap, stacks, globals); rounded down to a multiple of 10 and at
// most maxPercent.
func Percent(base uint64) int {
	if base >= Headroom {
		return 100
	}
	if base < Headroom*100/maxPercent {
		return maxPercent
	}
	return int(Headroom*100/base) / 10 * 10
}
