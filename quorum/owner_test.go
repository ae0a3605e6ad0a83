package quorum_test

import (
	"context"
	"errors"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

const ownerTTL = 10 * time.Second

// ownerCluster is a cluster over three in-memory nodes, of which the
// first may be wrapped (to lose replies or stall), closed at cleanup.
func ownerCluster(t *testing.T, first func(*embedded.Memory) quorum.Node) (*quorum.Cluster, []*embedded.Memory) {
	t.Helper()
	var mems []*embedded.Memory
	var nodes []quorum.Node
	for _, name := range []string{"m1", "m2", "m3"} {
		m := embedded.New(name)
		mems = append(mems, m)
		nodes = append(nodes, m)
	}
	if first != nil {
		nodes[0] = first(mems[0])
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
	return c, mems
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
	c, m := ownerCluster(t, nil)
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
	var first *faultnode.Node
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { first = faultnode.Wrap(m); return first })
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokW2, 2)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	if got := first.Calls("HoldOwner"); got < 2 {
		t.Fatalf("a split was tried %d times, want it retried", got)
	}
	wantState(t, m[0], tokW, 1)
	wantState(t, m[1], tokW2, 2)
	wantState(t, m[2], "", 0)
}

// A granted round adds one hold on the nodes of the granted token and
// nothing on a node that stores another token of the owner.
func TestLockOwnerGrantUndoesOtherToken(t *testing.T) {
	c, m := ownerCluster(t, nil)
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

// lostReply is a node whose HoldOwner lands but whose answer is lost.
type lostReply struct{ *embedded.Memory }

func (n lostReply) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind != quorum.HoldOwner {
		n.Memory.Do(deadline, cmd, r)
		return
	}
	n.Memory.Do(deadline, cmd, quorum.ReceiverFunc(func(quorum.Reply) {
		r.Receive(quorum.Reply{Err: errors.New("reply lost")})
	}))
}

// A node that did not answer gets the round undone: the fresh token it
// stored is gone.
func TestLockOwnerUndoesUnanswered(t *testing.T) {
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { return lostReply{m} })
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
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { return lostReply{m} })
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

// lateHold is a node whose HoldOwner is held back until gate closes and
// lands after the round gave up on it, as a stalled server's would.
type lateHold struct {
	*embedded.Memory
	gate   chan struct{}
	landed chan struct{}
	once   sync.Once
}

func (n *lateHold) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind != quorum.HoldOwner {
		n.Memory.Do(deadline, cmd, r)
		return
	}
	n.once.Do(func() {
		go func() {
			defer close(n.landed)
			<-n.gate
			quorum.Call(context.Background(), n.Memory, cmd)
		}()
	})
	time.AfterFunc(time.Until(deadline), func() { r.Receive(quorum.Reply{Err: context.DeadlineExceeded}) })
}

// A round's HoldOwner that lands after the round was undone adds nothing:
// neither a fresh token on a free node nor a hold.
func TestLockOwnerLateHoldAddsNothing(t *testing.T) {
	late := &lateHold{gate: make(chan struct{}), landed: make(chan struct{})}
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { late.Memory = m; return late })
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	close(late.gate)
	<-late.landed
	wantState(t, m[0], "", 0)
}

// flakyUndo is lostReply whose UndoHold fails too until mended.
type flakyUndo struct {
	lostReply
	mu     sync.Mutex
	mended bool
}

func (n *flakyUndo) mend() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mended = true
}

func (n *flakyUndo) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	n.mu.Lock()
	mended := n.mended
	n.mu.Unlock()
	if cmd.Kind == quorum.UndoHold && !mended {
		r.Receive(quorum.Reply{Err: errors.New("connection reset")})
		return
	}
	n.lostReply.Do(deadline, cmd, r)
}

// An undo that a node did not answer is sent again until it does.
func TestLockOwnerUndoRetried(t *testing.T) {
	flaky := &flakyUndo{}
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { flaky.lostReply = lostReply{m}; return flaky })
	seed(t, m[0], tokW, 1)
	seed(t, m[1], tokV, 1)
	seed(t, m[2], tokV, 1)
	if _, err := c.LockOwner(context.Background(), "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("LockOwner = %v, want ErrNotAcquired", err)
	}
	if tok, n := state(t, m[0]); tok != tokW || n != 2 || c.PendingReleases()[0] == 0 {
		t.Fatalf("before the retry m1 stores %q with %d holds, pending %v; want the round's hold there and its undo pending", tok, n, c.PendingReleases())
	}
	flaky.mend()
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
	late := &lateHold{gate: make(chan struct{}), landed: make(chan struct{})}
	c, m := ownerCluster(t, func(m *embedded.Memory) quorum.Node { late.Memory = m; return late })
	for _, n := range m {
		seed(t, n, tokW, 1)
	}
	r, err := c.LockOwner(context.Background(), "k", "w", ownerTTL)
	if err != nil || r.Token != tokW || r.Holds != 2 {
		t.Fatalf("LockOwner = %+v, %v", r, err)
	}
	wantState(t, m[0], tokW, 1)
	close(late.gate)
	<-late.landed
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
