package commands

import (
	"testing"
)

// TestResetReleasesBoundLocks: RESET makes the connection a fresh one, so
// the locks bound to it (a session lock, a KEEPALIVE lock) are released as
// they would be when it closed, while other locks stay.
func TestResetReleasesBoundLocks(t *testing.T) {
	f := newFixture(t, Options{})
	other := &fixture{h: f.h, s: f.h.NewSession("127.0.0.1:2")}
	t.Cleanup(func() { f.h.CloseSession(other.s) })

	if got := f.do("SET", "session", "s-tok", "NX"); got != "+OK" {
		t.Fatalf("SET NX = %q", got)
	}
	if got := f.do("LOCK", "kept", "10000", "KEEPALIVE"); got[0] != '[' {
		t.Fatalf("LOCK KEEPALIVE = %q", got)
	}
	if got := f.do("SET", "plain", "p-tok", "NX", "PX", "10000"); got != "+OK" {
		t.Fatalf("SET NX PX = %q", got)
	}
	if got := f.do("RESET"); got != "+RESET" {
		t.Fatalf("RESET = %q", got)
	}
	for _, k := range []string{"session", "kept"} {
		if got := other.do("GET", k); got != "nil" {
			t.Errorf("GET %s after RESET = %q, want nil", k, got)
		}
	}
	if got := other.do("GET", "plain"); got != "$p-tok" {
		t.Errorf("a lock with a ttl is not bound to the connection: GET plain = %q", got)
	}
	if ka := f.h.KeepaliveStats(); ka.Held != 0 || ka.Lost != 0 {
		t.Errorf("after RESET: %+v, want nothing held or lost", ka)
	}
	// The connection still works and can bind new locks.
	if got := f.do("SET", "session", "s2", "NX"); got != "+OK" {
		t.Fatalf("SET NX after RESET = %q", got)
	}
	if got := other.do("PTTL", "session"); got != ":-1" {
		t.Fatalf("PTTL of a session lock taken after RESET = %q", got)
	}
}

// TestDelUnbindsLocks: DEL (and an expire to the past) takes a bound lock
// away; the proxy stops renewing it instead of counting it lost later.
func TestDelUnbindsLocks(t *testing.T) {
	f := newFixture(t, Options{})
	steps := [][]string{
		{"SET", "s", "tok", "NX"},
		{"LOCK", "k", "10000", "TOKEN", "kt", "KEEPALIVE"},
		{"SET", "e", "et", "NX"},
	}
	for _, st := range steps {
		if got := f.do(st...); got != "+OK" && got[0] != '[' {
			t.Fatalf("%v = %q", st, got)
		}
	}
	if got := f.do("DEL", "s", "k"); got != ":2" {
		t.Fatalf("DEL = %q", got)
	}
	if got := f.do("PEXPIRE", "e", "0"); got != ":1" {
		t.Fatalf("PEXPIRE e 0 = %q", got)
	}
	if ka := f.h.KeepaliveStats(); ka.Held != 0 || ka.Lost != 0 {
		t.Fatalf("after DEL: %+v, want nothing held or lost", ka)
	}
	// The connection can take the key again and keep it.
	if got := f.do("SET", "s", "tok", "NX"); got != "+OK" {
		t.Fatalf("SET NX after DEL = %q", got)
	}
	if ka := f.h.KeepaliveStats(); ka.Held != 1 {
		t.Fatalf("after a new SET NX: %+v, want 1 held", ka)
	}
}
