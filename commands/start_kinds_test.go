package commands

import (
	"strings"
	"testing"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// LOCK's SHARED and FAIR kinds without WAIT are one round each, and Start
// runs them as it runs a try-lock: the readers of a key share it, a plain
// lock and a fair lock are refused where it is held, and a fair lock is
// refused where it is held. PERMITS (several rounds) and the options that
// wait or keep books are left to Run.
func TestStartLockKinds(t *testing.T) {
	var nodes []quorum.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		nodes = append(nodes, embedded.New(n))
	}
	cl, err := quorum.New(nodes, quorum.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	h := New(cl, Options{})
	s := h.NewSession("127.0.0.1:1")
	t.Cleanup(func() { h.CloseSession(s) })

	start := func(words ...string) (string, bool) {
		t.Helper()
		var r recorder
		if !startWait(t, h, s, words, &r, make(chan struct{})) {
			return "", false
		}
		return r.String(), true
	}
	granted := func(words ...string) string {
		t.Helper()
		got, ok := start(words...)
		if !ok {
			t.Fatalf("%v has no asynchronous form", words)
		}
		parts := strings.Fields(strings.Trim(got, "[]"))
		if len(parts) != 2 || !strings.HasPrefix(parts[0], "$") || !strings.HasPrefix(parts[1], ":") {
			t.Fatalf("%v: %s, want [token, validity]", words, got)
		}
		return strings.TrimPrefix(parts[0], "$")
	}
	refused := func(words ...string) {
		t.Helper()
		got, ok := start(words...)
		if !ok {
			t.Fatalf("%v has no asynchronous form", words)
		}
		if got != "nil" {
			t.Fatalf("%v: %s, want nil (held elsewhere)", words, got)
		}
	}

	r1 := granted("LOCK", "rw", "10000", "SHARED")
	r2 := granted("LOCK", "rw", "10000", "SHARED")
	if r1 == r2 || !quorum.IsSharedToken(r1) || !quorum.IsSharedToken(r2) {
		t.Fatalf("readers' tokens %q and %q: want two distinct reader tokens", r1, r2)
	}
	refused("LOCK", "rw", "10000")
	refused("LOCK", "rw", "10000", "FAIR")

	f := granted("LOCK", "fair", "10000", "FAIR", "TOKEN", "me")
	if f != "me" {
		t.Fatalf("LOCK … FAIR TOKEN me granted %q", f)
	}
	refused("LOCK", "fair", "10000", "FAIR")
	refused("LOCK", "fair", "10000", "SHARED")

	// Started locks are released as Run's are.
	for _, rel := range [][]string{{"UNLOCK", "rw", r1}, {"UNLOCK", "rw", r2}, {"UNLOCK", "fair", "me"}} {
		var r recorder
		h.Exec(s, byteArgs(rel), &r)
		if r.String() != ":1" {
			t.Fatalf("%v: %s, want :1", rel, r.String())
		}
	}
	granted("LOCK", "rw", "10000")

	for _, words := range [][]string{
		{"LOCK", "p", "10000", "PERMITS", "2"},
		{"LOCK", "w", "10000", "SHARED", "WAIT", "100"},
		{"LOCK", "w", "10000", "FAIR", "WAIT", "100"},
		{"LOCK", "k", "10000", "SHARED", "KEEPALIVE"},
		{"LOCK", "k", "10000", "FAIR", "FENCE"},
	} {
		if got, ok := start(words...); ok {
			t.Errorf("%v ran on Start (%s); want it left to Run", words, got)
		}
	}
}
