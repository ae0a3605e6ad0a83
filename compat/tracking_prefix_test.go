package compat

import (
	"strings"
	"testing"
)

// TestTrackingBcastPrefixSet: BCAST without PREFIX tracks the empty
// prefix, every key, and Redis refuses a prefix given after it, as it
// overlaps; the connection's prefixes are a set, listed in order, to
// which a later BCAST without PREFIX adds "" too.
func TestTrackingBcastPrefixSet(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		// RESP2: no invalidation (a flush as the backends' reports
		// begin) comes between the replies.
		c := dialWire(t, tg.addr)
		prefixes := func() string {
			t.Helper()
			info := c.do("CLIENT", "TRACKINGINFO")
			_, p, ok := strings.Cut(info, " prefixes ")
			if !ok {
				t.Fatalf("CLIENT TRACKINGINFO = %s", info)
			}
			return strings.TrimSuffix(p, "]")
		}
		steps := []struct {
			args []string
			want string
		}{
			{[]string{"CLIENT", "TRACKING", "ON", "BCAST"}, "+OK"},
			{[]string{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"},
				"-ERR Prefix 'x' overlaps with an existing prefix ''. Prefixes for a single client must not overlap."},
			{[]string{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", ""},
				"-ERR Prefix '' overlaps with an existing prefix ''. Prefixes for a single client must not overlap."},
			{[]string{"CLIENT", "TRACKING", "ON", "BCAST"}, "+OK"},
		}
		for _, s := range steps {
			if v := c.do(s.args...); v != s.want {
				t.Errorf("%v = %s, want %s", s.args, v, s.want)
			}
		}
		if p := prefixes(); p != `*[""]` {
			t.Errorf("prefixes after BCAST = %s, want the empty prefix alone", p)
		}
		c.do("CLIENT", "TRACKING", "OFF")
		for _, args := range [][]string{
			{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "y"},
			{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b"},
			{"CLIENT", "TRACKING", "ON", "BCAST"},
		} {
			if v := c.do(args...); v != "+OK" {
				t.Errorf("%v = %s", args, v)
			}
		}
		if p := prefixes(); p != `*["" b y]` {
			t.Errorf(`prefixes after PREFIX y, PREFIX b, then none = %s, want *["" b y]`, p)
		}
	})
}
