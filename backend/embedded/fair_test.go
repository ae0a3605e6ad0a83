package embedded

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// fairStep is one command of a fair queue's life and what it answers.
type fairStep struct {
	what string
	cmd  quorum.Cmd
	ok   bool
	n    int64  // N, checked where chkN is set
	tok  string // Get: the token, or a prefix ending in ':'
	chkN bool
}

func fairSteps() []fairStep {
	const k = "fk"
	acq := func(tok string, ticket int64) quorum.Cmd {
		return quorum.Cmd{Kind: quorum.FairAcquire, Key: k, Token: tok, N: ticket, TTL: time.Minute, Add: time.Minute}
	}
	get := quorum.Cmd{Kind: quorum.Get, Key: k}
	tail := quorum.Cmd{Kind: quorum.FairTail, Key: k}
	release := func(tok string) quorum.Cmd {
		return quorum.Cmd{Kind: quorum.CompareAndDelete, Key: k, Token: tok, Notify: true}
	}
	setNX := func(tok string, mark time.Duration) quorum.Cmd {
		return quorum.Cmd{Kind: quorum.SetNX, Key: k, Token: tok, TTL: time.Minute, Add: mark}
	}
	return []fairStep{
		{what: "holder takes the key", cmd: setNX("h", 0), ok: true},
		{what: "a queues behind the holder", cmd: acq("a", 10)},
		{what: "b queues behind a", cmd: acq("b", 20)},
		{what: "tail is b's ticket", cmd: tail, ok: true, n: 20, chkN: true},
		{what: "a waiter's SET NX meets the queue", cmd: setNX("x", time.Minute), n: quorum.FairQueued, chkN: true},
		{what: "a try of FAIR meets the queue", cmd: acq("x", 0)},
		{what: "the holder's release", cmd: release("h"), ok: true},
		{what: "the key is reserved", cmd: get, ok: true, tok: "redlockd:queued:"},
		{what: "a plain SET NX meets the reservation", cmd: setNX("x", 0)},
		{what: "b is not first", cmd: acq("b", 20)},
		{what: "a is first and takes the reservation", cmd: acq("a", 10), ok: true},
		{what: "a holds the key", cmd: get, ok: true, tok: "a"},
		{what: "b leaves", cmd: quorum.Cmd{Kind: quorum.FairLeave, Key: k, Token: "b"}, ok: true},
		{what: "nobody is queued", cmd: tail, ok: true, n: 0, chkN: true},
		{what: "a's release frees the key", cmd: release("a"), ok: true},
		{what: "the key is free", cmd: get},
		{what: "a try of FAIR takes a free key", cmd: acq("y", 0), ok: true},
		{what: "undo of y's grant", cmd: quorum.Cmd{Kind: quorum.FairUndo, Key: k, Token: "y", N: 5, Add: time.Minute}, ok: true},
		{what: "y is queued again", cmd: tail, ok: true, n: 5, chkN: true},
		{what: "the key is reserved for y", cmd: get, ok: true, tok: "redlockd:queued:"},
		{what: "y leaves", cmd: quorum.Cmd{Kind: quorum.FairLeave, Key: k, Token: "y"}, ok: true},
		{what: "the reservation went with the queue", cmd: get},
		{what: "leaving again finds nothing", cmd: quorum.Cmd{Kind: quorum.FairLeave, Key: k, Token: "y"}},
	}
}

func runFairSteps(t *testing.T, n quorum.Node) {
	t.Helper()
	for _, s := range fairSteps() {
		rep := quorum.Call(t.Context(), n, s.cmd)
		switch {
		case rep.Err != nil:
			t.Fatalf("%s: %v", s.what, rep.Err)
		case rep.OK != s.ok, s.chkN && rep.N != s.n:
			t.Fatalf("%s: reply %+v, want OK %v N %d", s.what, rep, s.ok, s.n)
		case s.tok != "" && !strings.HasSuffix(s.tok, ":") && rep.Token != s.tok,
			s.tok != "" && !strings.HasPrefix(rep.Token, s.tok):
			t.Fatalf("%s: token %q, want %q", s.what, rep.Token, s.tok)
		}
	}
}

// TestFairQueueOnBothNodes: the Redis node and the in-memory node run a
// fair queue's commands alike: queue order, the reservation a release
// leaves, the SET NX forms that meet it, undo and leave.
func TestFairQueueOnBothNodes(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		m, _ := newTestMemory(t)
		runFairSteps(t, m)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		runFairSteps(t, newTestRedis(t, srv.Addr()))
		// Every key the queue used carries an expiry.
		c := srv.Client()
		for _, k := range c.Keys(t.Context(), "*").Val() {
			if d := c.PTTL(t.Context(), k).Val(); d < 0 {
				t.Errorf("%s left without an expiry (%v)", k, d)
			}
		}
	})
}

// TestFairEntryExpires: an entry that is not refreshed leaves the queue
// when its expiry passes, and the key's reservation with it.
func TestFairEntryExpires(t *testing.T) {
	m, clock := newTestMemory(t)
	acq := quorum.Cmd{Kind: quorum.FairAcquire, Key: "k", Token: "a", N: 1, TTL: time.Minute, Add: time.Second}
	quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "h", TTL: time.Minute})
	quorum.Call(t.Context(), m, acq)
	quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: "h", Notify: true})
	if rep := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "x", TTL: time.Minute}); rep.OK {
		t.Fatal("SET NX took a key reserved for its queue")
	}
	clock.advance(time.Second)
	if rep := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.FairTail, Key: "k"}); rep.N != 0 {
		t.Fatalf("tail %d after the entry's expiry, want 0", rep.N)
	}
	if rep := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "x", TTL: time.Minute}); !rep.OK {
		t.Fatal("SET NX refused after the queue expired")
	}
}

// A fair queue that no waiter refreshes goes from the in-memory node by
// itself, as Redis expires it, even when its key is never touched again.
func TestMemoryFairQueueSwept(t *testing.T) {
	m := New("m")
	defer m.Close()
	now := time.Now()
	m.mu.Lock()
	m.now = func() time.Time { return now }
	m.mu.Unlock()
	ctx := context.Background()
	// A holder, then a waiter queued behind it for one second.
	quorum.Call(ctx, m, quorum.Cmd{Kind: quorum.SetNX, Key: "held", Token: "h", TTL: time.Hour})
	quorum.Call(ctx, m, quorum.Cmd{Kind: quorum.FairAcquire, Key: "held", Token: "w", N: 1, TTL: time.Minute, Add: time.Second})
	m.mu.Lock()
	queued := memFairQueues(m)
	m.now = func() time.Time { return now.Add(time.Minute) }
	m.mu.Unlock()
	if queued != 1 {
		t.Fatalf("%d queues after a waiter queued, want 1", queued)
	}
	for i := range 200 { // writes to other keys only
		quorum.Call(ctx, m, quorum.Cmd{Kind: quorum.Set, Key: fmt.Sprintf("other%d", i), Token: "x", TTL: time.Hour})
	}
	m.mu.Lock()
	left := memFairQueues(m)
	m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d queues left after their entries expired, want 0", left)
	}
}

// memFairQueues counts the node's fair queues (sorted sets at a queue
// key). The caller holds m.mu.
func memFairQueues(m *Memory) int {
	n := 0
	for k, h := range m.scripts.hashes {
		if h.zset && strings.Contains(k, "redlockd:fair:") && m.now().Before(h.expires) {
			n++
		}
	}
	return n
}
