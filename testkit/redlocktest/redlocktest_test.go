package redlocktest

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// TestInstanceIsTheBinarysStack: an instance is assembled as the binary
// is: one MaxTTL for the commands and the quorum, and the metrics as the
// observer behind INFO.
func TestInstanceIsTheBinarysStack(t *testing.T) {
	var seen quorum.Config
	in := Start(t, Options{
		Commands: commands.Options{MaxTTL: 2 * time.Second},
		Quorum:   func(c *quorum.Config) { seen = *c },
	})
	if seen.MaxTTL != 2*time.Second {
		t.Errorf("the quorum's MaxTTL is %v, want the commands' 2s", seen.MaxTTL)
	}
	if seen.RestartQuarantine != 0 || seen.Observer == nil {
		t.Errorf("quorum config: quarantine %v (want 0 unless asked), observer %v (want the metrics)", seen.RestartQuarantine, seen.Observer)
	}
	c := in.Client(t, 2)
	if _, err := c.Do(t.Context(), "LOCK", "k", 2000).Slice(); err != nil {
		t.Fatalf("LOCK: %v", err)
	}
	info, err := c.Info(t.Context(), "locks").Result()
	if err != nil || !strings.Contains(info, "quorum_acquire_ok:1\r\n") {
		t.Fatalf("INFO locks = %q, %v; want the metrics' count of the LOCK", info, err)
	}
}
