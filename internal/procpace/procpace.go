// Package procpace sets how many threads run the server's goroutines at
// once (GOMAXPROCS) from the CPU the process uses, for a server whose
// work per request is small and mostly waiting on sockets.
//
// With more processors than its load needs, Go's scheduler keeps waking
// idle threads to look for work whenever a goroutine becomes runnable, and
// parks them again when they find none: a futex wake, a context switch and,
// on a virtual machine, an interrupt between processors, per wake-up. A
// proxy's goroutines become runnable tens of thousands of times a second,
// each for a few microseconds, so those wake-ups cost a large share of its
// CPU while a load that fits in one CPU gains nothing from them. (Where
// other processes keep every CPU busy, a second thread can still take a
// larger share of them; the pace does not see that.) It therefore starts at one
// processor and adds one whenever the process keeps nearly all of them
// busy (RaiseAt), up to what the runtime chose at start (the CPUs, or the
// container's quota), and gives one back once the load has fitted in one
// fewer for a while (LowerAt, Hold samples in a row).
package procpace

import (
	"os"
	"runtime"
	"sync"
	"time"
)

const (
	// Interval is how often the process's CPU use is sampled.
	Interval = 100 * time.Millisecond
	// RaiseAt: a sample whose CPU use is over this share of the current
	// processors adds one.
	RaiseAt = 0.9
	// LowerAt and Hold: Hold samples in a row whose CPU use is under this
	// share of one processor fewer take one away.
	LowerAt = 0.6
	Hold    = 20
)

var once sync.Once

// Start paces the processors from now on, for the life of the process. It
// does nothing when the operator chose them (GOMAXPROCS set in the
// environment), when the runtime has one only, where the process's CPU use
// cannot be read, and on later calls.
func Start() {
	if os.Getenv("GOMAXPROCS") != "" || !supported {
		return
	}
	once.Do(func() {
		most := runtime.GOMAXPROCS(0)
		if most <= 1 {
			return
		}
		p := &pace{most: most, procs: 1}
		runtime.GOMAXPROCS(1)
		go p.run(cpuTime, runtime.GOMAXPROCS, nil)
	})
}

// pace is the state of the pacing: the processors in use, the most it
// may use, and how many samples in a row fitted in one fewer.
type pace struct {
	procs, most int
	low         int
}

// Step takes one sample, busy being the CPU the process used over the
// last interval in processors (1.5: one and a half), and returns the
// processors to use from now on.
func (p *pace) Step(busy float64) int {
	switch {
	case busy > RaiseAt*float64(p.procs) && p.procs < p.most:
		p.procs++
		p.low = 0
	case p.procs > 1 && busy < LowerAt*float64(p.procs-1):
		if p.low++; p.low >= Hold {
			p.procs--
			p.low = 0
		}
	default:
		p.low = 0
	}
	return p.procs
}

// run samples cpu every Interval and sets the processors with set when
// a step changes them, until stop closes (nil: never).
func (p *pace) run(cpu func() time.Duration, set func(int) int, stop <-chan struct{}) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	lastCPU, lastAt := cpu(), time.Now()
	for {
		var now time.Time
		select {
		case now = <-t.C:
		case <-stop:
			return
		}
		used := cpu()
		wall := now.Sub(lastAt)
		if wall <= 0 {
			continue
		}
		before := p.procs
		if after := p.Step(float64(used-lastCPU) / float64(wall)); after != before {
			set(after)
		}
		lastCPU, lastAt = used, now
	}
}
