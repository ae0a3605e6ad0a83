package faultnode_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// reply runs cmd on n and hands back a channel that gets its one reply.
func reply(n quorum.Node, deadline time.Time, cmd quorum.Cmd) <-chan quorum.Reply {
	ch := make(chan quorum.Reply, 1)
	n.Do(deadline, cmd, quorum.ReceiverFunc(func(r quorum.Reply) { ch <- r }))
	return ch
}

// TestGivingUpKeepsOrder: a delayed command that reaches its deadline
// while it waits behind an earlier one fails, and the command after it
// still runs after the earlier one.
func TestGivingUpKeepsOrder(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	far := time.Now().Add(time.Minute)
	f.SetDelay(200 * time.Millisecond)
	set := reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "a", TTL: time.Minute})
	f.SetDelay(0)
	// Whether it gives up before the SET runs or not, it must not
	// change what the release sees.
	late := reply(f, time.Now().Add(10*time.Millisecond), quorum.Cmd{Kind: quorum.Get, Key: "k"})
	release := reply(f, far, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: "a"})
	if r := <-set; !r.OK || r.Err != nil {
		t.Fatalf("SetNX = %+v", r)
	}
	<-late
	if r := <-release; !r.OK || r.N != 1 {
		t.Fatalf("the release after the SetNX = %+v, want it deleted (N 1)", r)
	}
	if n := f.Calls("Get"); n != 1 {
		t.Fatalf("Calls(Get) = %d, want 1", n)
	}
}

// TestZeroDeadlineIsNone: a delayed command without a deadline runs.
func TestZeroDeadlineIsNone(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	f.SetDelay(time.Millisecond)
	if r := <-reply(f, time.Time{}, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "a", TTL: time.Minute}); !r.OK || r.Err != nil {
		t.Fatalf("SetNX without a deadline = %+v, want OK", r)
	}
}

var errBoom = errors.New("boom")

// TestOpFaults: a per-command fault overrides the node's, for that
// command only, and nil ends the override.
func TestOpFaults(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	far := time.Now().Add(time.Minute)
	f.SetOpFault("SetNX", errBoom)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "a", TTL: time.Minute}); !errors.Is(r.Err, errBoom) {
		t.Fatalf("SetNX under its fault = %+v, want boom", r)
	}
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.Set, Key: "k", Token: "a", TTL: time.Minute}); !r.OK || r.Err != nil {
		t.Fatalf("Set beside a SetNX fault = %+v, want OK", r)
	}
	f.SetFault(errBoom)
	f.SetOpFault("Get", faultnode.ErrAnswerNo)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.Get, Key: "k"}); r.OK || r.Err != nil {
		t.Fatalf("refused Get = %+v, want no, without an error", r)
	}
	f.SetFault(nil)
	f.SetOpFault("Get", nil)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.Get, Key: "k"}); !r.OK || r.Token != "a" {
		t.Fatalf("Get once the faults are gone = %+v, want a", r)
	}
}

// TestReplyLost: the command runs on the node, and only its reply is lost.
func TestReplyLost(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	f.SetFault(faultnode.ReplyLost(errBoom))
	far := time.Now().Add(time.Minute)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "a", TTL: time.Minute}); !errors.Is(r.Err, errBoom) || r.OK {
		t.Fatalf("SetNX with its reply lost = %+v, want boom", r)
	}
	if tok, _, ok, err := nodetest.Get(context.Background(), m, "k"); !ok || err != nil || tok != "a" {
		t.Fatalf("the node holds %q, %v, %v; want the lost reply's write a", tok, ok, err)
	}
}

// TestOpDelayApart: a command held up by SetOpDelay does not hold up the
// commands given after it, and OnReply and WaitAnswered see each reply.
func TestOpDelayApart(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	var mu sync.Mutex
	var seen []string
	f.OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
		mu.Lock()
		seen = append(seen, cmd.Token)
		mu.Unlock()
	})
	far := time.Now().Add(time.Minute)
	f.SetOpDelay("SetNX", time.Hour)
	// It fails at its deadline, which the Set must not wait for (2s:
	// far longer than the Set takes on any machine).
	late := reply(f, time.Now().Add(2*time.Second), quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "late", TTL: time.Minute})
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.Set, Key: "k", Token: "now", TTL: time.Minute}); !r.OK {
		t.Fatalf("Set behind a held-up SetNX = %+v, want OK", r)
	}
	f.WaitAnswered(t, "Set", 1)
	if n := f.Answered("SetNX"); n != 0 {
		t.Fatalf("Answered(SetNX) = %d while it is held up", n)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "now" {
		t.Errorf("OnReply saw %v, want [now]", seen)
	}
	mu.Unlock()
	if r := <-late; !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("held-up SetNX at its deadline = %+v, want DeadlineExceeded", r)
	}
	f.WaitAnswered(t, "SetNX", 1)
	f.SetOpDelay("SetNX", 0)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "j", Token: "a", TTL: time.Minute}); !r.OK {
		t.Fatalf("SetNX with its delay removed = %+v, want OK", r)
	}
}

// TestOpStuck: a stuck command fails at its deadline and still reaches
// the node once its gate closes; one whose gate closes in time is
// answered by the node; other commands pass meanwhile.
func TestOpStuck(t *testing.T) {
	m := embedded.New("m")
	defer m.Close()
	f := faultnode.Wrap(m)
	gate := make(chan struct{})
	f.SetOpStuck("SetNX", gate)
	late := reply(f, time.Now().Add(10*time.Millisecond), quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "late", TTL: time.Minute})
	far := time.Now().Add(time.Minute)
	held := reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "j", Token: "held", TTL: time.Minute})
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.Set, Key: "x", Token: "now", TTL: time.Minute}); !r.OK {
		t.Fatalf("Set beside a stuck SetNX = %+v, want OK", r)
	}
	if r := <-late; !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("stuck SetNX at its deadline = %+v, want DeadlineExceeded", r)
	}
	if _, _, ok, _ := nodetest.Get(context.Background(), m, "k"); ok {
		t.Fatal("the stuck SetNX reached the node before its gate closed")
	}
	f.SetOpStuck("SetNX", nil)
	if r := <-reply(f, far, quorum.Cmd{Kind: quorum.SetNX, Key: "y", Token: "after", TTL: time.Minute}); !r.OK {
		t.Fatalf("SetNX once no longer stuck = %+v, want OK", r)
	}
	close(gate)
	if r := <-held; !r.OK || r.Err != nil {
		t.Fatalf("stuck SetNX whose gate closed in time = %+v, want the node's OK", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tok, _, ok, err := nodetest.Get(context.Background(), m, "k")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if tok != "late" {
				t.Fatalf("the node holds %q, want the late SetNX's write", tok)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stuck SetNX never reached the node once its gate closed")
		}
		time.Sleep(time.Millisecond) // polling the node
	}
	if n := f.Answered("SetNX"); n != 3 {
		t.Fatalf("Answered(SetNX) = %d, want 3 (the late one once)", n)
	}
}
