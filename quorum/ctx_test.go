package quorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// stuckCluster is a cluster of three embedded nodes, each behind a
// faultnode, with a NodeTimeout of a minute: a command stuck on two of
// them (stick) holds its round until open, far longer than any test
// waits.
type stuckCluster struct {
	c     *quorum.Cluster
	mem   []quorum.Node
	nodes []*faultnode.Node
	gate  chan struct{}
	once  sync.Once
}

func newStuckCluster(t *testing.T) *stuckCluster {
	t.Helper()
	s := &stuckCluster{mem: memNodes(3), gate: make(chan struct{})}
	nodes := make([]quorum.Node, len(s.mem))
	for i, n := range s.mem {
		f := faultnode.Wrap(n)
		s.nodes, nodes[i] = append(s.nodes, f), f
	}
	s.c = slowRetryClusterTimeout(t, nodes, time.Minute)
	t.Cleanup(func() {
		s.open()
		_ = s.c.Close()
	})
	return s
}

// stick holds kind's commands on the nodes named until open.
func (s *stuckCluster) stick(kind quorum.CmdKind, nodes ...int) {
	for _, i := range nodes {
		s.nodes[i].SetOpStuck(backend.KindName(kind), s.gate)
	}
}

// open lets the stuck commands reach their nodes.
func (s *stuckCluster) open() { s.once.Do(func() { close(s.gate) }) }

// get is key's token on node i ("" : absent).
func (s *stuckCluster) get(t *testing.T, i int, key string) string {
	t.Helper()
	rep := quorum.Call(t.Context(), s.mem[i], quorum.Cmd{Kind: quorum.Get, Key: key})
	if rep.Err != nil {
		t.Fatalf("node %d: GET %s: %v", i, key, rep.Err)
	}
	if !rep.OK {
		return ""
	}
	return rep.Token
}

// everywhere waits until key's token is want ("" : absent) on every node.
func (s *stuckCluster) everywhere(t *testing.T, what, key, want string) {
	t.Helper()
	pollUntil(t, what, func() bool {
		for i := range s.mem {
			if s.get(t, i, key) != want {
				return false
			}
		}
		return true
	})
}

// leaveMidRound runs call with a ctx that is cancelled once the stalled
// nodes (1 and 2) were asked kind, and checks that call returns ctx's
// error while their commands are still held: its wait ended, not its
// round. It then opens the gate and waits until both nodes answered.
func (s *stuckCluster) leaveMidRound(t *testing.T, kind quorum.CmdKind, call func(ctx context.Context) error) {
	t.Helper()
	op := backend.KindName(kind)
	before := []int{s.nodes[1].Calls(op), s.nodes[2].Calls(op)}
	s.stick(kind, 1, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- call(ctx) }()
	pollUntil(t, op+" asked of the stalled nodes", func() bool {
		return s.nodes[1].Calls(op) > before[0] && s.nodes[2].Calls(op) > before[1]
	})
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("with its ctx cancelled mid-round: %v, want context.Canceled", err)
		}
	case <-time.After(prompt):
		t.Fatalf("cancelled mid-round, still waiting for its round (%s held on two of three nodes)", op)
	}
	answered := []int{s.nodes[1].Answered(op), s.nodes[2].Answered(op)}
	s.open()
	s.nodes[1].WaitAnswered(t, op, answered[0]+1)
	s.nodes[2].WaitAnswered(t, op, answered[1]+1)
}

// An acquire whose caller leaves mid-round returns ctx's error at once,
// and the grant its round makes once the stalled nodes answer is undone
// on every node, as a failed round's is: a cancelled acquire never leaves
// a lock held.
func TestCancelledAcquireUndone(t *testing.T) {
	const key, ttl = "ctx-acquire", time.Minute
	tests := []struct {
		name string
		kind quorum.CmdKind
		run  func(ctx context.Context, c *quorum.Cluster) error
		keys []string
	}{
		{"Acquire", quorum.SetNX, func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.Acquire(ctx, key, "tok", ttl)
			return err
		}, []string{key}},
		{"AcquireFair", quorum.FairAcquire, func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.AcquireFair(ctx, key, "tok", ttl)
			return err
		}, []string{key}},
		{"AcquireShared", quorum.AcquireShared, func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.AcquireShared(ctx, key, ttl)
			return err
		}, []string{key, quorum.SharedKey(key)}},
		{"AcquireAll", quorum.SetNXAll, func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.AcquireAll(ctx, []string{key, key + "-2"}, "tok", ttl)
			return err
		}, []string{key, key + "-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStuckCluster(t)
			s.leaveMidRound(t, tt.kind, func(ctx context.Context) error { return tt.run(ctx, s.c) })
			for _, k := range tt.keys {
				s.everywhere(t, "the late grant undone: "+k+" absent on every node", k, "")
			}
			// Nothing is left to keep the key: a new acquire gets it.
			if _, err := s.c.Acquire(t.Context(), key, "next", ttl); err != nil {
				t.Fatalf("acquire after the undone grant: %v", err)
			}
		})
	}
}

// A fair waiter whose caller leaves during its round returns ctx's error
// at once; the round's late grant is undone, and the waiter's entry,
// which the undo puts back, leaves the queue.
func TestCancelledFairRoundUndone(t *testing.T) {
	const key, ttl = "ctx-fair", time.Minute
	s := newStuckCluster(t)
	s.leaveMidRound(t, quorum.FairAcquire, func(ctx context.Context) error {
		_, err := s.c.AcquireFair(ctx, key, "tok", ttl, quorum.Wait(time.Minute))
		return err
	})
	// Free on every node: neither the late grant nor, while the gone
	// waiter stays queued, the reservation that the queue keeps there.
	s.everywhere(t, "the key free on every node, the late fair grant undone", key, "")
	pollUntil(t, "the gone waiter out of the queue on every node", func() bool {
		for i, n := range s.mem {
			rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.FairTail, Key: key})
			if rep.Err != nil {
				t.Fatalf("node %d: %v", i, rep.Err)
			}
			if rep.N != 0 {
				return false
			}
		}
		return true
	})
	if _, err := s.c.AcquireFair(t.Context(), key, "next", ttl); err != nil {
		t.Fatalf("fair acquire after the undone grant: %v", err)
	}
}

// A hand-over whose caller leaves mid-round returns ctx's error at once,
// and its late swap is swapped back: the old token holds the key again
// on every node.
func TestCancelledHandOverUndone(t *testing.T) {
	const key, ttl = "ctx-handover", time.Minute
	s := newStuckCluster(t)
	if _, err := s.c.Acquire(t.Context(), key, "old", ttl); err != nil {
		t.Fatal(err)
	}
	s.leaveMidRound(t, quorum.CompareAndSwap, func(ctx context.Context) error {
		_, err := s.c.HandOver(ctx, key, "old", "next", ttl)
		return err
	})
	s.everywhere(t, "the late hand-over swapped back on every node", key, "old")
}

// A release whose caller leaves mid-round returns ctx's error at once,
// and still lands on every node once the stalled nodes answer.
func TestCancelledReleaseLands(t *testing.T) {
	const key, ttl = "ctx-release", time.Minute
	tests := []struct {
		name  string
		kind  quorum.CmdKind
		token func(t *testing.T, c *quorum.Cluster) string
		run   func(ctx context.Context, c *quorum.Cluster, token string) error
	}{
		{"Release", quorum.CompareAndDelete, plainLock, func(ctx context.Context, c *quorum.Cluster, token string) error {
			_, err := c.Release(ctx, key, token)
			return err
		}},
		{"ReleaseStatus", quorum.CompareAndDelete, plainLock, func(ctx context.Context, c *quorum.Cluster, token string) error {
			_, err := c.ReleaseStatus(ctx, key, token)
			return err
		}},
		{"Unhold", quorum.Unhold, func(t *testing.T, c *quorum.Cluster) string {
			r, err := c.LockOwner(t.Context(), key, "owner", ttl)
			if err != nil {
				t.Fatal(err)
			}
			return r.Token
		}, func(ctx context.Context, c *quorum.Cluster, token string) error {
			_, _, err := c.Unhold(ctx, key, token)
			return err
		}},
		{"Delete", quorum.Delete, plainLock, func(ctx context.Context, c *quorum.Cluster, _ string) error {
			_, err := c.Delete(ctx, key)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStuckCluster(t)
			token := tt.token(t, s.c)
			s.leaveMidRound(t, tt.kind, func(ctx context.Context) error { return tt.run(ctx, s.c, token) })
			s.everywhere(t, "the release landed on every node", key, "")
		})
		t.Run(tt.name+", caller already gone", func(t *testing.T) {
			s := newStuckCluster(t)
			token := tt.token(t, s.c)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			// Sent all the same: an unlock sent just before its client
			// hung up still lands.
			_ = tt.run(ctx, s.c, token)
			s.everywhere(t, "the release landed on every node", key, "")
		})
	}
}

func plainLock(t *testing.T, c *quorum.Cluster) string {
	t.Helper()
	if _, err := c.Acquire(t.Context(), "ctx-release", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	return "tok"
}

// A kept lock's renewal whose caller leaves while a node's restore is
// held returns ctx's error at once, and the restore still lands there.
func TestCancelledRestoreLands(t *testing.T) {
	const key, token, ttl = "ctx-restore", "tok", time.Minute
	s := newStuckCluster(t)
	if _, err := s.c.Acquire(t.Context(), key, token, ttl); err != nil {
		t.Fatal(err)
	}
	// Node 2 lost the lock: the renewal restores it there.
	if rep := quorum.Call(t.Context(), s.mem[2], quorum.Cmd{Kind: quorum.Delete, Key: key}); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	op := backend.KindName(quorum.RestoreHeld)
	s.nodes[2].SetOpStuck(op, s.gate)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.c.RenewKept(ctx, key, token, ttl)
		errc <- err
	}()
	pollUntil(t, "the restore asked of node 2", func() bool { return s.nodes[2].Calls(op) > 0 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("RenewKept with its ctx cancelled during the restore = %v, want context.Canceled", err)
		}
	case <-time.After(prompt):
		t.Fatal("RenewKept cancelled during the restore still waits for it")
	}
	s.open()
	s.everywhere(t, "the restore landed on node 2", key, token)
}
