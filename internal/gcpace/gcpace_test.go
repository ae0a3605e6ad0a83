package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, maxPercent},
		{1 << 20, maxPercent}, // 64 MiB over 1 MiB would be 6400
		{4 << 20, 1600},
		{20 << 20, 320},
		{30 << 20, 210},
		{Headroom - 1, 100},
		{Headroom, 100},
		{1 << 30, 100},
	} {
		if got := Percent(tt.live); got != tt.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}

// The growth the pace allows is between the default's (GOGC=100: the
// base) and max(base, Headroom).
func TestPercentBoundsGrowth(t *testing.T) {
	for base := uint64(Headroom * 100 / maxPercent); base < 4*Headroom; base += 1 << 20 {
		grow := base * uint64(Percent(base)) / 100
		if grow > max(base, Headroom) || grow < base {
			t.Fatalf("base %d: growth %d outside [base, max(base, Headroom)]", base, grow)
		}
	}
}

// Start sets the pace after the next collection, and leaves an operator's
// GOGC alone.
func TestStartSetsThePace(t *testing.T) {
	t.Setenv("GOGC", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	Start()
	for range 50 {
		runtime.GC()
		if pct := debug.SetGCPercent(100); pct != 100 {
			if pct < 100 || pct > maxPercent {
				t.Fatalf("pace %d outside [100, %d]", pct, maxPercent)
			}
			return
		}
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
	}
	t.Fatal("the pace was never set after 50 collections")
}

// deep parks on release with about 32 KiB of stack in use.
func deep(n int, release <-chan struct{}, parked chan<- struct{}) byte {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		parked <- struct{}{}
		<-release
		return pad[0]
	}
	return pad[n%len(pad)] + deep(n-1, release, parked)
}

// Goroutine stacks count towards the base: a process whose small heap
// sits beside many goroutines is paced as a large one, so the heap it lets
// grow stays within the bound.
func TestStartCountsStacks(t *testing.T) {
	t.Setenv("GOGC", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	const n = 1000 // about 32 MiB of stacks beside a heap of a few MiB
	release, parked := make(chan struct{}), make(chan struct{})
	defer close(release)
	for range n {
		go deep(32, release, parked)
	}
	for range n {
		<-parked
	}
	Start()
	for range 50 {
		runtime.GC()
		if pct := debug.SetGCPercent(100); pct != 100 {
			// Counted, the base is over 32 MiB: at most 200. Not counted,
			// the heap alone would give well over 1000.
			if pct > 200 {
				t.Fatalf("pace %d beside about 32 MiB of stacks, want at most 200", pct)
			}
			t.Logf("pace %d", pct)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the pace was never set after 50 collections")
}
