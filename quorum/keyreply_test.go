package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

var errWrongType = wire.ServerError{Code: "WRONGTYPE", Text: "WRONGTYPE Operation against a key holding the wrong kind of value"}

// TestKeyReplyIsAnAnswer: a node's error reply about the key (WRONGTYPE)
// is its answer, a no, never a failure to answer: a majority of them is
// the read's verdict (Holder.ErrReply), not a *NoQuorumError, and a
// release or extend is simply not done. Any other error reply (OOM) is
// still no answer.
func TestKeyReplyIsAnAnswer(t *testing.T) {
	fs, ns := newNodes(3)
	c := newCluster(t, ns, testConfig())
	ctx := context.Background()
	fs[0].SetFault(errWrongType)
	fs[1].SetFault(errWrongType)
	hd, err := c.Get(ctx, "k")
	if err != nil || hd.Held || hd.ErrReply != errWrongType.Text || !hd.Exists() {
		t.Fatalf("Get = %+v, %v; want the majority's WRONGTYPE", hd, err)
	}
	if ok, err := c.Release(ctx, "k", "tok"); ok || err != nil {
		t.Fatalf("Release = %v, %v; want not held", ok, err)
	}
	if _, err := c.Extend(ctx, "k", "tok", time.Second); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("Extend = %v; want ErrNotHeld", err)
	}
	fs[1].SetFault(wire.ServerError{Code: "OOM", Text: "OOM command not allowed when used memory > 'maxmemory'."})
	hd, err = c.Get(ctx, "k")
	if err != nil || hd.Exists() {
		t.Fatalf("Get with one WRONGTYPE, one OOM = %+v, %v; want not held", hd, err)
	}
	fs[2].SetFault(errors.New("connection refused"))
	if _, err := c.Get(ctx, "k"); !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("Get with one WRONGTYPE, one OOM, one down = %v; want NOQUORUM", err)
	}
}
