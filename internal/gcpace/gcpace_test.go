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

// The heap the pace allows stays within max(2 × live, live + Headroom).
func TestPercentBoundsGrowth(t *testing.T) {
	for live := uint64(Headroom * 100 / maxPercent); live < 4*Headroom; live += 1 << 20 {
		grow := live * uint64(Percent(live)) / 100
		if grow > max(live, Headroom) || grow < live {
			t.Fatalf("live %d: growth %d outside [live, max(live, Headroom)]", live, grow)
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
