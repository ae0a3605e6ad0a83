package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// slowFixture is a fixture whose nodes may take 5 s to answer: the
// delays below hold a round up, they do not fail it.
func slowFixture(t *testing.T) *fixture {
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 5 * time.Second
	return newFixtureWith(t, Options{}, cfg)
}

// runOrStart runs words on s, with Start ("start") or Run ("run", on a
// goroutine of its own), replying to r and closing the channel it
// returns once the command has ended.
func runOrStart(t *testing.T, h *Handler, s *Session, mode string, words []string, r *recorder) chan struct{} {
	t.Helper()
	done := make(chan struct{})
	if mode == "start" {
		if !h.Start(s, NewRequest(byteArgs(words)), r, func() { close(done) }) {
			t.Fatalf("%v has no asynchronous form", words)
		}
		return done
	}
	go func() {
		h.Exec(s, byteArgs(words), r)
		close(done)
	}()
	return done
}

// awaitCall waits until every node was given a command that Calls names
// op; a generous bound only keeps the test from hanging.
func awaitCall(t *testing.T, nodes []*faultnode.Node, op string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range nodes {
		for n.Calls(op) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no %s was sent", op)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// TestHangUpDuringTheLastRoundTakesNothing: a client that hangs up while
// the last round of its lock is in flight (a fenced LOCK's fence round,
// node-redlock's acquire of one key or several) is granted nothing, by
// Start or by Run: the lock nobody will be told of goes. The delayed
// round outlasts the hang-up by far; the hang-up comes once every node
// was sent the delayed command.
func TestHangUpDuringTheLastRoundTakesNothing(t *testing.T) {
	acquire := sha1Hex(redlockAcquireV5)
	for _, tc := range []struct {
		name, op string
		words    []string
		keys     []string
	}{
		{"FENCE", "ReadFence", []string{"LOCK", "k", "60000", "FENCE"}, []string{"k"}},
		{"WAIT FENCE", "ReadFence", []string{"LOCK", "k", "60000", "WAIT", "5000", "FENCE"}, []string{"k"}},
		{"OWNER WAIT FENCE", "ReadFence", []string{"LOCK", "k", "60000", "OWNER", "me", "WAIT", "5000", "FENCE"}, []string{"k"}},
		{"node-redlock one key", "SetNX", []string{"EVALSHA", acquire, "1", "k", "tok", "60000"}, []string{"k"}},
		{"node-redlock two keys", "SetNXAll", []string{"EVALSHA", acquire, "2", "a", "b", "tok", "60000"}, []string{"a", "b"}},
	} {
		for _, mode := range []string{"start", "run"} {
			if mode == "start" && tc.name == "node-redlock two keys" {
				continue // left to Run
			}
			t.Run(mode+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				f := slowFixture(t)
				for _, n := range f.nodes {
					n.SetOpDelay(tc.op, time.Second)
				}
				s := f.h.NewSession("127.0.0.1:2")
				t.Cleanup(func() { f.h.CloseSession(s) })
				var r recorder
				done := runOrStart(t, f.h, s, mode, tc.words, &r)
				awaitCall(t, f.nodes, tc.op)
				s.HangUp()
				awaitDone(t, done)
				// The lock goes unwaited for (an owner's hold on a
				// goroutine of its own): wait for it, boundedly.
				for _, key := range tc.keys {
					got := awaitGone(f, key)
					if got != "nil" {
						t.Errorf("GET %s after a hang-up during %v (reply %s): %s, want nil", key, tc.words, r.String(), got)
					}
				}
			})
		}
	}
}

// TestStartedKeepaliveBindsInItsRoundsDB: a started LOCK … KEEPALIVE is
// bound in the database its round ran in, whatever the connection
// selected before the round ended (a caller of Start may, as Run's
// callers cannot).
func TestStartedKeepaliveBindsInItsRoundsDB(t *testing.T) {
	f := slowFixture(t)
	for _, n := range f.nodes {
		n.SetOpDelay("SetNX", time.Second)
	}
	var r recorder
	done := runOrStart(t, f.h, f.s, "start", []string{"LOCK", "k", "10000", "KEEPALIVE"}, &r)
	if got := f.do("SELECT", "1"); got != "+OK" {
		t.Fatalf("SELECT 1: %s", got)
	}
	awaitDone(t, done)
	token := strings.TrimPrefix(strings.Fields(strings.Trim(r.String(), "[]"))[0], "$")
	if f.h.bound.get(lockRef{0, "k", token}) == nil {
		t.Errorf("LOCK k 10000 KEEPALIVE (%s), taken in db 0, is not bound there", r.String())
	}
	if f.h.bound.get(lockRef{1, "k", token}) != nil {
		t.Error("LOCK k 10000 KEEPALIVE, taken in db 0, is bound in db 1")
	}
}

// TestHangUpDuringHandOverLeavesTheKeyFree: a client that hangs up while
// its SET … IFEQ hands its session lock over leaves the key free once its
// session closes: neither the new token, which nobody will be told of,
// nor the old one, which the closing session released, holds it. Every
// command to the nodes is delayed alike, so that they keep their order:
// the session's release reaches each node behind the hand-over.
func TestHangUpDuringHandOverLeavesTheKeyFree(t *testing.T) {
	for _, px := range [][]string{{"PX", "60000"}, nil} {
		t.Run(strings.Join(append([]string{"SET k next"}, px...), " "), func(t *testing.T) {
			t.Parallel()
			f := slowFixture(t)
			s := f.h.NewSession("127.0.0.1:3")
			var held recorder
			f.h.Exec(s, byteArgs([]string{"SET", "k", "old", "NX"}), &held)
			if held.String() != "+OK" {
				t.Fatalf("SET k old NX: %s", held.String())
			}
			for _, n := range f.nodes {
				n.SetDelay(300 * time.Millisecond)
			}
			var r recorder
			words := append(append([]string{"SET", "k", "next"}, px...), "IFEQ", "old")
			done := runOrStart(t, f.h, s, "run", words, &r)
			awaitCall(t, f.nodes, "CompareAndSwap")
			s.HangUp()
			awaitDone(t, done)
			f.h.CloseSession(s)
			got := awaitGone(f, "k")
			if got != "nil" {
				t.Errorf("GET k after a hang-up during %v (reply %s) and the session's close: %s, want nil", words, r.String(), got)
			}
		})
	}
}

// TestHangUpDuringDelDeletesEveryKey: DEL of several keys deletes every
// one of them even when its client hangs up while the first is being
// deleted, as Redis runs a command it has read to its end.
func TestHangUpDuringDelDeletesEveryKey(t *testing.T) {
	f := slowFixture(t)
	for _, k := range []string{"a", "b", "c"} {
		if got := f.do("SET", k, "v", "PX", "60000"); got != "+OK" {
			t.Fatalf("SET %s: %s", k, got)
		}
	}
	for _, n := range f.nodes {
		n.SetOpDelay("Delete", 300*time.Millisecond)
	}
	s := f.h.NewSession("127.0.0.1:4")
	t.Cleanup(func() { f.h.CloseSession(s) })
	var r recorder
	done := runOrStart(t, f.h, s, "run", []string{"DEL", "a", "b", "c"}, &r)
	awaitCall(t, f.nodes, "Delete")
	s.HangUp()
	awaitDone(t, done)
	for _, n := range f.nodes {
		n.SetOpDelay("Delete", 0)
	}
	for _, k := range []string{"a", "b", "c"} {
		got := awaitGone(f, k)
		if got != "nil" {
			t.Errorf("GET %s after a hang-up during DEL a b c (reply %s): %s, want nil", k, r.String(), got)
		}
	}
}

// awaitGone reads key until the fixture's nodes no longer hold it, for a
// few seconds at the most (a release in flight lands meanwhile), and
// returns the last reply to GET.
func awaitGone(f *fixture, key string) string {
	got := f.do("GET", key)
	for end := time.Now().Add(5 * time.Second); got != "nil" && time.Now().Before(end); got = f.do("GET", key) {
		time.Sleep(time.Millisecond)
	}
	return got
}

// awaitDone waits until a command's done is closed; a generous bound
// only keeps the test from hanging.
func awaitDone(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not done")
	}
}
