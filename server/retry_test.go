package server

import (
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// TestRetryDelaySettings: RetryDelay bounds the quorum's retry pauses from
// a tenth of it to it; the default is the quorum's own 5–50ms, and Tune
// still has the last word.
func TestRetryDelaySettings(t *testing.T) {
	def := quorum.DefaultConfig()
	for _, tc := range []struct {
		set      time.Duration
		min, max time.Duration
	}{
		{DefaultConfig().RetryDelay, def.RetryDelayMin, def.RetryDelayMax},
		{0, def.RetryDelayMin, def.RetryDelayMax},
		{2 * time.Second, 200 * time.Millisecond, 2 * time.Second},
	} {
		cfg := DefaultConfig()
		cfg.RetryDelay = tc.set
		if got := cfg.quorumConfig(nil); got.RetryDelayMin != tc.min || got.RetryDelayMax != tc.max {
			t.Errorf("RetryDelay %v: quorum pauses %v–%v, want %v–%v", tc.set, got.RetryDelayMin, got.RetryDelayMax, tc.min, tc.max)
		}
	}
	cfg := DefaultConfig()
	cfg.RetryDelay = time.Hour
	cfg.Tune = func(q *quorum.Config) { q.RetryDelayMin, q.RetryDelayMax = time.Millisecond, time.Millisecond }
	if got := cfg.quorumConfig(nil); got.RetryDelayMax != time.Millisecond {
		t.Errorf("Tune's retry delay lost to RetryDelay: %v", got.RetryDelayMax)
	}
}
