package faultnode_test

import (
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/leaktest"
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
