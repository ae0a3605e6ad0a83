package procpace

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// steps feeds p the samples and returns the processors after each.
func steps(p *pace, busy ...float64) []int {
	out := make([]int, len(busy))
	for i, b := range busy {
		out[i] = p.Step(b)
	}
	return out
}

func TestStepRaisesWhileNearlyEveryProcessorIsBusy(t *testing.T) {
	p := &pace{procs: 1, most: 3}
	got := steps(p, 0.5, 0.95, 1.7, 1.85, 2.9, 3.0)
	want := []int{1, 2, 2, 3, 3, 3} // 1.7 of 2 is under RaiseAt; never past most
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("processors after each sample = %v, want %v", got, want)
		}
	}
}

func TestStepLowersOnlyAfterHoldSamplesThatFitInOneFewer(t *testing.T) {
	p := &pace{procs: 3, most: 4}
	for i := range Hold - 1 {
		if n := p.Step(1.0); n != 3 { // under LowerAt of 2 processors
			t.Fatalf("sample %d: %d processors, want 3 until %d samples fitted", i, n, Hold)
		}
	}
	// One sample that does not fit starts the count again.
	if n := p.Step(1.5); n != 3 {
		t.Fatalf("after a busier sample: %d processors, want 3", n)
	}
	for range Hold - 1 {
		p.Step(1.0)
	}
	if p.procs != 3 {
		t.Fatalf("the count did not start again: %d processors after %d more samples", p.procs, Hold-1)
	}
	if n := p.Step(1.0); n != 2 {
		t.Fatalf("after %d samples that fitted in 2: %d processors, want 2", Hold, n)
	}
	// Never below one.
	one := &pace{procs: 1, most: 4}
	for range 3 * Hold {
		if n := one.Step(0); n != 1 {
			t.Fatalf("an idle process at one processor went to %d", n)
		}
	}
}

// TestRunSetsWhatTheStepsDecide runs the sampler over a clock of CPU
// that grows by twice the wall time (two processors' worth, more than
// RaiseAt of one): it sets two processors, once.
func TestRunSetsWhatTheStepsDecide(t *testing.T) {
	var mu sync.Mutex
	var sets []int
	start := time.Now()
	cpu := func() time.Duration { return 2 * time.Since(start) }
	set := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		sets = append(sets, n)
		return 0
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	p := &pace{procs: 1, most: 2}
	go func() { p.run(cpu, set, stop); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(sets)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(Interval / 10)
	}
	time.Sleep(3 * Interval) // more samples: most is reached, nothing more is set
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(sets) != 1 || sets[0] != 2 {
		t.Fatalf("set calls = %v, want [2]", sets)
	}
}

// TestStartLeavesTheOperatorsChoice: with GOMAXPROCS in the environment
// the processors stay as they are.
func TestStartLeavesTheOperatorsChoice(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	before := runtime.GOMAXPROCS(0)
	Start() // a pacer would have set one processor before returning
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS = %d after Start with the variable set, want %d", got, before)
	}
}

func TestCPUTimeGrows(t *testing.T) {
	if !supported {
		t.Skip("no CPU time here")
	}
	before := cpuTime()
	for end := time.Now().Add(time.Second); cpuTime()-before < 5*time.Millisecond && time.Now().Before(end); {
	}
	if cpuTime() <= before {
		t.Fatal("cpuTime did not grow while the test spun")
	}
}
