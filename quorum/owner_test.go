package quorum_test

import (
	"context"
	"errors"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

const ownerTTL = 10 * time.Second

// ownerCluster is a cluster over three engines m1..m3, each behind a
// faultnode that fails, holds up or loses its commands, closed at
// cleanup. under, when set, is the first node's layer between its engine
// and its faultnode.
func ownerCluster(t *testing.T, under func(*embedded.Memory) quorum.Node) (*quorum.Cluster, []*embedded.Memory, []*faultnode.Node) {
	t.Helper()
	var mems []*embedded.Memory
	var fs []*faultnode.Node
	var nodes []quorum.Node
	for i, name := range []string{"m1", "m2", "m3"} {
		m := embedded.New(name)
		var n quorum.Node = m
		if i == 0 && under != nil {
			n = under(m)
		}
		f := faultnode.Wrap(n)
		mems, fs, nodes = append(mems, m), append(fs, f), append(nodes, f)
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond // generous: the machine is shared
	cfg.ReleaseRetry = 20 * time.Millisecond
	cfg.RetryDelayMin, cfg.RetryDelayMax = time.Millisecond, 2*time.Millisecond
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for _, m := range mems {
			m.Close()
		}
	})
	return c, mems, fs
}

// seed stores a lock of token with holds holds on m, as the nodes do.
func seed(t *testing.T, m *embedded.Memory, token string, holds int64) {
	t.Helper()
	ctx := context.Background()
	if err := nodetest.Set(ctx, m, "k", token, ownerTTL); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.Set(ctx, m, quorum.HoldsKey("k"), quorum.FormatHolds(token, holds), ownerTTL); err != nil {
		t.Fatal(err)
	}
}

// state is m's lock token and hold count ("" and 0 when free).
func state(t *testing.T, m *embedded.Memory) (string, int64) {
	t.Helper()
	ctx := context.Background()
	tok, _, ok, err := nodetest.Get(ctx, m, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "", 0
	}
	h, _, ok, err := nodetest.Get(ctx, m, quorum.HoldsKey("k"))
	if err != nil || !ok {
		return tok, 1
	}
	ht, n, ok := quorum.ParseHolds(h)
	if !ok || ht != tok {
		return tok, 1
	}
	return tok, n
}

func wantState(t *testing.T, m *embedded.Memory, token string, holds int64) {
	t.Helper()
	if tok, n := state(t, m); tok != token || n != holds {
		t.Fatalf("%s stores %q with %d holds, want %q with %d", m.Name(), tok, n, token, holds)
	}
}

var (
	tokW  = quorum.OwnerPrefix("w") + "a"
	tokW2 = quorum.OwnerPrefix("w") + "b"
	tokV  = quorum.OwnerPrefix("v") + "c"
)

// A round that reaches the owner's token on a minority only is not
// granted, and the hold it added there is taken back.
func TestLockOwnerUndoesMinorityHold(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	wantState(t, m[0], tokW, 1)
	wantState(t, m[1], tokV, 1)
}

// A split among the owner's own tokens is retried, and every round takes
// back what it added: the holds on each token and the fresh token on the
// free node.
func TestLockOwnerSplitUndone(t *testing.T) {
	c, m, fs := ownerCluster(t, nil)
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokW2, 2)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	if got := fs[0].Calls("HoldOwner"); got < 2 {
		t.Fatalf("a split was tried %d times, want it retried", got)
	}
	wantState(t, m[0], tokW, 1)
	wantState(t, m[1], tokW2, 2)
	wantState(t, m[2], "", 0)
}

// A granted round adds one hold on the nodes of the granted token and
// nothing on a node that stores another token of the owner.
func TestLockOwnerGrantUndoesOtherToken(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokW, 1)
	seed(t, m[2], tokW2, 1)
	r, err := c.LockOwner(context.Background(), "k", "w", ownerTTL)
	if err != nil || r.Token != tokW || r.Holds != 2 || r.Validity <= 0 {
		t.Fatalf("LockOwner = %+v, %v; want %q with 2 holds", r, err, tokW)
	}
	wantState(t, m[0], tokW, 2)
	wantState(t, m[1], tokW, 2)
	wantState(t, m[2], tokW2, 1)
}

// loseHolds has f's HoldOwner land and its answer be lost.
func loseHolds(f *faultnode.Node) {
	f.SetOpFault("HoldOwner", faultnode.ReplyLost(errors.New("reply lost")))
}

// A node that did not answer gets the round undone: the fresh token it
// stored is gone.
func TestLockOwnerUndoesUnanswered(t *testing.T) {
	c, m, fs := ownerCluster(t, nil)
	loseHolds(fs[0])
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	wantState(t, m[0], "", 0)
}

// A hold that an unanswered node added to the granted token is one of the
// grant's holds there, and stays.
func TestLockOwnerKeepsUnansweredGrantedHold(t *testing.T) {
	c, m, fs := ownerCluster(t, nil)
	loseHolds(fs[0])
	for _, n := range m {
		seed(t, n, tokW, 1)
	}
	r, err := c.LockOwner(context.Background(), "k", "w", ownerTTL)
	if err != nil || r.Token != tokW || r.Holds != 2 {
		t.Fatalf("LockOwner = %+v, %v", r, err)
	}
	for _, n := range m {
		wantState(t, n, tokW, 2)
	}
}

// stuckHolds holds m1's HoldOwner commands until release is called, as
// a stalled server holds them: each fails at its deadline and lands
// after it. release lets them reach the engine, and returns once every
// HoldOwner asked of m1 has.
func stuckHolds(t *testing.T) (c *quorum.Cluster, m []*embedded.Memory, release func()) {
	t.Helper()
	landed := make(chan struct{}, 64)
	c, m, fs := ownerCluster(t, func(m *embedded.Memory) quorum.Node {
		return &nodetest.Hooked{Node: m, After: func(cmd quorum.Cmd, _ *quorum.Reply) {
			if cmd.Kind == quorum.HoldOwner {
				landed <- struct{}{}
			}
		}}
	})
	gate := make(chan struct{})
	fs[0].SetOpStuck("HoldOwner", gate)
	release = func() {
		t.Helper()
		n := fs[0].Calls("HoldOwner")
		fs[0].WaitAnswered(t, "HoldOwner", n) // each failed at its deadline
		close(gate)
		timeout := time.After(10 * time.Second)
		for range n {
			select {
			case <-landed:
			case <-timeout:
				t.Fatal("a held HoldOwner never reached m1")
			}
		}
	}
	return c, m, release
}

// A round's HoldOwner that lands after the round was undone adds nothing:
// neither a fresh token on a free node nor a hold.
func TestLockOwnerLateHoldAddsNothing(t *testing.T) {
	c, m, release := stuckHolds(t)
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	release()
	wantState(t, m[0], "", 0)
}

// An undo that a node did not answer is sent again until it does.
func TestLockOwnerUndoRetried(t *testing.T) {
	c, m, fs := ownerCluster(t, nil)
	// m1's HoldOwner lands unanswered, and its UndoHold fails until
	// mended.
	loseHolds(fs[0])
	fs[0].SetOpFault("UndoHold", errors.New("connection reset"))
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	if tok, n := state(t, m[0]); tok != tokW || n != 2 || c.PendingReleases()[0] == 0 {
		t.Fatalf("before the retry m1 stores %q with %d holds, pending %v; want the round's hold there and its undo pending", tok, n, c.PendingReleases())
	}
	fs[0].SetOpFault("UndoHold", nil)
	deadline := time.Now().Add(5 * time.Second)
	for c.PendingReleases()[0] > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the undo was never retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantState(t, m[0], tokW, 1)
}

// A round that reaches a node only after the grant adds its hold there
// when it finds the granted token: the node counts the grant.
func TestLockOwnerLateGrantedHoldCounts(t *testing.T) {
	c, m, release := stuckHolds(t)
	for _, n := range m {
		seed(t, n, tokW, 1)
	}
	r, err := c.LockOwner(context.Background(), "k", "w", ownerTTL)
	if err != nil || r.Token != tokW || r.Holds != 2 {
		t.Fatalf("LockOwner = %+v, %v", r, err)
	}
	wantState(t, m[0], tokW, 1)
	release()
	wantState(t, m[0], tokW, 2)
}

// A LockOwner whose caller leaves while its round is in flight returns at
// once with ctx's error, and the hold the round then adds is taken back
// by its mark: a fresh lock is gone from every node, and the holds of a
// lock the owner already held are as they were.
func TestLockOwnerCancelledTakesHoldBack(t *testing.T) {
	for _, held := range []int64{0, 2} {
		gate := make(chan struct{})
		asked := make(chan struct{}, 3)
		undone := make(chan struct{}, 3)
		var mems []*embedded.Memory
		var nodes []quorum.Node
		for _, name := range []string{"m1", "m2", "m3"} {
			m := embedded.New(name)
			t.Cleanup(func() { m.Close() })
			mems = append(mems, m)
			if held > 0 {
				seed(t, m, tokW, held)
			}
			nodes = append(nodes, &nodetest.Hooked{
				Node: m,
				Before: func(ctx context.Context, cmd quorum.Cmd) error {
					if cmd.Kind == quorum.HoldOwner {
						asked <- struct{}{}
						<-gate
					}
					return nil
				},
				After: func(cmd quorum.Cmd, rep *quorum.Reply) {
					if cmd.Kind == quorum.UndoHold {
						undone <- struct{}{}
					}
				},
			})
		}
		cfg := quorum.DefaultConfig()
		cfg.NodeTimeout = 30 * time.Second // the gate, not the deadline, holds the round
		c, err := quorum.New(nodes, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })

		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan error, 1)
		go func() {
			_, err := c.LockOwner(ctx, "k", "w", ownerTTL)
			out <- err
		}()
		for range nodes {
			<-asked
		}
		cancel()
		if err := <-out; !errors.Is(err, context.Canceled) {
			t.Fatalf("held %d: LockOwner = %v, want context.Canceled", held, err)
		}
		close(gate)
		for range nodes {
			select {
			case <-undone:
			case <-time.After(10 * time.Second):
				t.Fatalf("held %d: the cancelled round's hold was not taken back on every node", held)
			}
		}
		for _, m := range mems {
			if held == 0 {
				wantState(t, m, "", 0)
			} else {
				wantState(t, m, tokW, held)
			}
		}
	}
}
