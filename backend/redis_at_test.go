package backend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// A reply read off the connection says when it was read: after the call
// and no later than its receipt. A command that never reached the server
// has no read time.
func TestRedisReplyReadTime(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	for _, cmd := range []quorum.Cmd{
		setNXCmd("k", "a"),
		setNXCmd("k", "b"), // refused: a reply all the same
		{Kind: quorum.CompareAndDelete, Key: "k", Token: "a"},
	} {
		before := time.Now()
		rep := quorum.Call(t.Context(), r, cmd)
		after := time.Now()
		if rep.Err != nil {
			t.Fatalf("%v: %v", cmd.Kind, rep.Err)
		}
		if rep.At.Before(before) || rep.At.After(after) {
			t.Errorf("%v: read at %v, want within [%v, %v]", cmd.Kind, rep.At, before, after)
		}
	}
	ch := make(chan quorum.Reply, 1)
	r.Do(time.Now().Add(-time.Millisecond), setNXCmd("k2", "a"), quorum.ReceiverFunc(func(rep quorum.Reply) { ch <- rep }))
	var rep quorum.Reply
	select {
	case rep = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to an expired command")
	}
	if !errors.Is(rep.Err, context.DeadlineExceeded) || !rep.At.IsZero() {
		t.Errorf("expired command: %+v, want a deadline error and no read time", rep)
	}
}
