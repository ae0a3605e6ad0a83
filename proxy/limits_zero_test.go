package proxy

import (
	"net"
	"testing"
	"time"
)

// TestZeroLimitsAreNone: 0 in Options means "no limit" for every
// per-connection limit, as it does on redlockd's flags; a negative value
// is read the same way.
func TestZeroLimitsAreNone(t *testing.T) {
	for _, n := range []int{0, -1} {
		if got := maxReplyBytes(n); got != 0 {
			t.Errorf("MaxReplyBytes %d: cap %d, want none (0)", n, got)
		}
	}
	if got := maxReplyBytes(4096); got != 4096 {
		t.Errorf("MaxReplyBytes 4096: cap %d", got)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, d := range []time.Duration{0, -time.Second} {
		if c := withWriteTimeout(a, d); c != a {
			t.Errorf("WriteTimeout %v: the connection was wrapped (%T), want no bound", d, c)
		}
	}
	if _, ok := withWriteTimeout(a, time.Second).(*writeTimeoutConn); !ok {
		t.Error("WriteTimeout 1s: the connection was not wrapped")
	}
}
