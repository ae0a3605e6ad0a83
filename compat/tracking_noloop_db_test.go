package compat

import (
	"strings"
	"testing"
)

// TestTrackingNoLoopOtherDB: Redis's tracking ignores the database, and
// NOLOOP leaves out only the connection's own writes: a client tracking
// with BCAST NOLOOP that wrote k in db 0 is told of another client's
// write of k in db 1. redlockd once took the backends' reports of that
// write for the client's own (db 0 still held what the client wrote) and
// told nothing.
func TestTrackingNoLoopOtherDB(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		ctx := testCtx(t)
		warmTracking(t, ctx, tg.addr, tg.other, len(tg.backends))
		a := trackingClient(t, tg.addr, "BCAST", "NOLOOP", "PREFIX", "nl:")
		// seen hears every backend's reports through a's proxy.
		seen := trackingClient(t, tg.addr, "BCAST", "PREFIX", "nl:")
		reported := func(key string) {
			t.Helper()
			for range tg.backends {
				seen.readUntil(func(v string) bool { return isInvalidation(v, key) })
			}
		}
		b := dialWire(t, tg.other)
		if v := a.do("SET", "nl:k", "v", "PX", "60000"); v != "+OK" {
			t.Fatalf("own SET = %s", v)
		}
		reported("nl:k")
		// Another client's write of another key: a is told of it, and
		// of nothing of its own write meanwhile.
		if v := b.do("SET", "nl:mark", "m", "PX", "60000"); v != "+OK" {
			t.Fatalf("SET nl:mark = %s", v)
		}
		for _, v := range a.readUntil(func(v string) bool { return isInvalidation(v, "nl:mark") }) {
			if isInvalidation(v, "nl:k") {
				t.Errorf("told %s: its own write", v)
			}
		}
		if v := b.do("SELECT", "1"); v != "+OK" {
			t.Fatalf("SELECT 1 = %s", v)
		}
		if v := b.do("SET", "nl:k", "w", "PX", "60000"); v != "+OK" {
			t.Fatalf("SET in db 1 = %s", v)
		}
		got := a.readUntil(func(v string) bool { return isInvalidation(v, "nl:k") })
		for _, v := range got {
			if !strings.HasPrefix(v, ">[invalidate ") {
				t.Errorf("read %s, want invalidations only", v)
			}
		}
	})
}
