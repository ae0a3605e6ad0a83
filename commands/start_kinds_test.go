package commands

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// embeddedHandler is a Handler over three embedded nodes with cfg.
func embeddedHandler(t *testing.T, cfg quorum.Config) *Handler {
	t.Helper()
	var nodes []quorum.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		nodes = append(nodes, embedded.New(n))
	}
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return New(cl, Options{})
}

// calmConfig is the default configuration with a node timeout that a
// loaded machine does not reach: the tests that use it are not tests of
// timeouts.
func calmConfig() quorum.Config {
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second
	return cfg
}

// embeddedSession is a session of a Handler over three in-memory nodes
// with calmConfig, closed with the test.
func embeddedSession(t *testing.T) (*Handler, *Session) {
	t.Helper()
	h := embeddedHandler(t, calmConfig())
	s := h.NewSession("127.0.0.1:1")
	t.Cleanup(func() { h.CloseSession(s) })
	return h, s
}

// LOCK's SHARED and FAIR kinds without WAIT are one round each, and Start
// runs them as it runs a try-lock: the readers of a key share it, a plain
// lock and a fair lock are refused where it is held, and a fair lock is
// refused where it is held. FENCE and KEEPALIVE follow the round on
// Start too: the fence from its last reply, the binding before the reply;
// and OWNER's holds, and PERMITS' read of the free slots and its tries of
// them. WAIT: see TestStartLockWait.
func TestStartLockKinds(t *testing.T) {
	h, s := embeddedSession(t)

	start := func(words ...string) (string, bool) { t.Helper(); return startReply(t, h, s, words...) }
	// grant is the n parts of words' grant: [token, validity], or with
	// FENCE [token, validity, fence]; the token without its "$".
	grant := func(n int, words ...string) []string {
		t.Helper()
		got, ok := start(words...)
		if !ok {
			t.Fatalf("%v has no asynchronous form", words)
		}
		parts := strings.Fields(strings.Trim(got, "[]"))
		if len(parts) != n || !strings.HasPrefix(parts[0], "$") || !strings.HasPrefix(parts[n-1], ":") {
			t.Fatalf("%v: %s, want a grant of %d parts", words, got, n)
		}
		parts[0] = strings.TrimPrefix(parts[0], "$")
		return parts
	}
	granted := func(words ...string) string { return grant(2, words...)[0] }
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

	// FENCE: a third element, strictly above the last fence of the key,
	// whichever kind holds it.
	fenced := func(words ...string) (string, int64) {
		t.Helper()
		parts := grant(3, words...)
		f, err := strconv.ParseInt(strings.TrimPrefix(parts[2], ":"), 10, 64)
		if err != nil || f <= 0 {
			t.Fatalf("%v: fence %q", words, parts[2])
		}
		return parts[0], f
	}
	unlock := func(key, token string) {
		t.Helper()
		var r recorder
		h.Exec(s, byteArgs([]string{"UNLOCK", key, token}), &r)
		if r.String() != ":1" {
			t.Fatalf("UNLOCK %s %s: %s, want :1", key, token, r.String())
		}
	}
	var last int64
	for _, kind := range [][]string{nil, {"FAIR"}, {"SHARED"}} {
		tok, f := fenced(append([]string{"LOCK", "fk", "10000", "FENCE"}, kind...)...)
		if f <= last {
			t.Fatalf("LOCK fk … FENCE %v: fence %d after %d, want it larger", kind, f, last)
		}
		last = f
		unlock("fk", tok)
	}

	// KEEPALIVE: the lock is bound (renewed) when its reply is written,
	// so that UNLOCK, which Start leaves to Run for a bound lock, finds
	// the binding and ends it.
	held := h.KeepaliveStats().Held
	ka, kf := fenced("LOCK", "ka", "10000", "KEEPALIVE", "FENCE")
	if kf <= last {
		t.Fatalf("LOCK ka … FENCE: fence %d after %d of another key's, want the clock floor to keep it larger", kf, last)
	}
	if got := h.KeepaliveStats().Held; got != held+1 {
		t.Fatalf("after LOCK … KEEPALIVE %d connection-bound locks, want %d", got, held+1)
	}
	refused("LOCK", "ka", "10000")
	if _, ok := start("UNLOCK", "ka", ka); ok {
		t.Fatal("UNLOCK of a bound lock ran on Start, which keeps no books of bindings")
	}
	unlock("ka", ka)
	if got := h.KeepaliveStats().Held; got != held {
		t.Fatalf("after UNLOCK %d connection-bound locks, want %d", got, held)
	}
	rk := granted("LOCK", "ka", "10000", "SHARED", "KEEPALIVE")
	unlock("ka", rk)

	// OWNER: the owner's holds of one token, counted on the nodes, with
	// FENCE and KEEPALIVE as for any lock; another owner is refused.
	o1 := granted("LOCK", "ow", "10000", "OWNER", "me")
	if o2 := granted("LOCK", "ow", "10000", "OWNER", "me"); o2 != o1 || !quorum.IsOwnerToken(o1) {
		t.Fatalf("the owner's holds have tokens %q and %q, want one owner token", o1, o2)
	}
	refused("LOCK", "ow", "10000", "OWNER", "other")
	o3, of := fenced("LOCK", "ow", "10000", "OWNER", "me", "FENCE", "KEEPALIVE")
	if o3 != o1 || of <= kf {
		t.Fatalf("a third hold: token %q, fence %d; want %q and a fence above %d", o3, of, o1, kf)
	}
	if got := h.KeepaliveStats().Held; got != held+1 {
		t.Fatalf("after LOCK … OWNER … KEEPALIVE %d connection-bound locks, want %d", got, held+1)
	}
	for range 3 {
		refused("LOCK", "ow", "10000")
		unlock("ow", o1)
	}
	if got := h.KeepaliveStats().Held; got != held {
		t.Fatalf("after the last UNLOCK %d connection-bound locks, want %d", got, held)
	}
	granted("LOCK", "ow", "10000")

	// PERMITS: as many permits as the semaphore has, each a slot's token;
	// a LOCK of another n is told the n the key holds.
	p1 := granted("LOCK", "sem", "10000", "PERMITS", "2")
	p2 := granted("LOCK", "sem", "10000", "PERMITS", "2", "KEEPALIVE")
	if p1 == p2 || !quorum.IsPermitToken(p1) || !quorum.IsPermitToken(p2) {
		t.Fatalf("permits %q and %q: want two permit tokens", p1, p2)
	}
	refused("LOCK", "sem", "10000", "PERMITS", "2")
	const mismatch = "-ERR PERMITS 3 does not match the 2 permits key holds"
	if got, ok := start("LOCK", "sem", "10000", "PERMITS", "3"); !ok || got != mismatch {
		t.Fatalf("LOCK sem … PERMITS 3 over a semaphore of 2: %s (started %v), want %s", got, ok, mismatch)
	}
	unlock("sem", p1)
	unlock("sem", p2)

}

// A LOCK … WAIT of any kind starts as a try does; a first round that is
// refused waits on, counted among the blocked clients, until a release
// lets it in, its wait ends (null), or its client hangs up (nothing held
// afterwards).
func TestStartLockWait(t *testing.T) {
	cfg := calmConfig()
	cfg.RetryDelayMin, cfg.RetryDelayMax = time.Hour, time.Hour // only a release lets a waiter in
	h := embeddedHandler(t, cfg)
	s := h.NewSession("127.0.0.1:1")
	t.Cleanup(func() { h.CloseSession(s) })
	exec := func(words ...string) string {
		var r recorder
		h.Exec(s, byteArgs(words), &r)
		return r.String()
	}
	token := func(reply string) string {
		return strings.TrimPrefix(strings.Fields(strings.Trim(reply, "[]"))[0], "$")
	}
	// started is a LOCK started on its own session, not yet done.
	type started struct {
		s    *Session
		r    *recorder
		done chan struct{}
	}
	begin := func(words ...string) started {
		t.Helper()
		st := started{h.NewSession("127.0.0.1:2"), new(recorder), make(chan struct{})}
		t.Cleanup(func() { h.CloseSession(st.s) })
		if !h.Start(st.s, NewRequest(byteArgs(words)), st.r, func() { close(st.done) }) {
			t.Fatalf("%v has no asynchronous form", words)
		}
		return st
	}
	finish := func(st started) string {
		t.Helper()
		select {
		case <-st.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a started LOCK … WAIT did not end")
		}
		return st.r.String()
	}
	waiting := func(st started) {
		t.Helper()
		select {
		case <-st.done:
			t.Fatalf("the waiter ended (%s) before anything let it in", st.r.String())
		default:
		}
		if n := h.Blocked(); n != 1 {
			t.Fatalf("%d blocked clients while a LOCK … WAIT waits, want 1", n)
		}
	}

	// Free: granted by its first round.
	if got := finish(begin("LOCK", "free", "10000", "WAIT", "5000")); !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK free … WAIT: %s, want a grant", got)
	}

	for _, tc := range []struct {
		name         string
		hold, waiter []string // the holder's LOCK, the waiter's
	}{
		{"plain", []string{"LOCK", "k1", "10000"}, []string{"LOCK", "k1", "10000", "WAIT", "60000"}},
		{"reader behind a writer", []string{"LOCK", "k2", "10000"}, []string{"LOCK", "k2", "10000", "SHARED", "WAIT", "60000"}},
		{"writer behind a reader", []string{"LOCK", "k3", "10000", "SHARED"}, []string{"LOCK", "k3", "10000", "WAIT", "60000"}},
		{"fair", []string{"LOCK", "k4", "10000", "FAIR"}, []string{"LOCK", "k4", "10000", "FAIR", "WAIT", "60000"}},
		{"owner", []string{"LOCK", "k5", "10000", "OWNER", "a"}, []string{"LOCK", "k5", "10000", "OWNER", "b", "WAIT", "60000"}},
		{"permit", []string{"LOCK", "k6", "10000", "PERMITS", "1"}, []string{"LOCK", "k6", "10000", "PERMITS", "1", "WAIT", "60000"}},
	} {
		holder := token(exec(tc.hold...))
		w := begin(tc.waiter...)
		waiting(w)
		if got := exec("UNLOCK", tc.hold[1], holder); got != ":1" {
			t.Fatalf("%s: UNLOCK of the holder: %s", tc.name, got)
		}
		got := finish(w)
		if !strings.HasPrefix(got, "[$") {
			t.Fatalf("%s: the waiter after the release: %s, want a grant", tc.name, got)
		}
		if n := h.Blocked(); n != 0 {
			t.Fatalf("%s: %d blocked clients after the wait, want 0", tc.name, n)
		}
		if got := exec("UNLOCK", tc.hold[1], token(got)); got != ":1" {
			t.Fatalf("%s: UNLOCK of the waiter's lock: %s", tc.name, got)
		}
	}

	// The wait ends: null, and nothing held by the waiter.
	holder := token(exec("LOCK", "k7", "10000"))
	if got := finish(begin("LOCK", "k7", "10000", "WAIT", "50")); got != "nil" {
		t.Fatalf("LOCK … WAIT 50 on a held key: %s, want nil", got)
	}
	// The client hangs up: its wait ends, and a release afterwards does
	// not hand the lock to it.
	w := begin("LOCK", "k7", "10000", "WAIT", "60000")
	waiting(w)
	w.s.HangUp()
	if got := finish(w); strings.HasPrefix(got, "[$") {
		t.Fatalf("a waiter that hung up: %s, want no grant", got)
	}
	if got := exec("UNLOCK", "k7", holder); got != ":1" {
		t.Fatalf("UNLOCK k7: %s", got)
	}
	if got := exec("LOCK", "k7", "10000"); !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK k7 after its holder left and its waiter hung up: %s, want a grant", got)
	}
}

// A LOCK … WAIT whose first round hears too few backends waits on, as the
// quorum's wait retries such rounds: once the backends answer again it is
// granted, not answered NOQUORUM by its first round.
func TestStartLockWaitThroughNoQuorum(t *testing.T) {
	f := newFixture(t, Options{})
	down := errors.New("backend down")
	f.nodes[1].SetFault(down)
	f.nodes[2].SetFault(down)
	var r recorder
	done := make(chan struct{})
	if !f.h.Start(f.s, NewRequest(byteArgs([]string{"LOCK", "k", "10000", "WAIT", "60000"})), &r, func() { close(done) }) {
		t.Fatal("LOCK … WAIT has no asynchronous form")
	}
	// The first round and the one after it heard one backend of three.
	f.nodes[0].WaitAnswered(t, "SetNX", 2)
	f.nodes[1].SetFault(nil)
	f.nodes[2].SetFault(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not granted once the backends answered again")
	}
	if got := r.String(); !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK … WAIT through a NOQUORUM first round: %s, want a grant", got)
	}
}
