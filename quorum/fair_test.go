package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

const fkey = "fair-key"

// tails is the largest ticket each node queues for fkey.
func tails(t *testing.T, nodes []quorum.Node) []int64 {
	t.Helper()
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		out[i] = quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.FairTail, Key: fkey}).N
	}
	return out
}

// fairAsync starts AcquireFair on c and returns once the waiter is queued
// on every node: each node's last ticket is a new one.
func fairAsync(t *testing.T, c *quorum.Cluster, nodes []quorum.Node, ctx context.Context, token string) <-chan acquired {
	t.Helper()
	before := tails(t, nodes)
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.AcquireFair(ctx, fkey, token, time.Minute, quorum.Wait(time.Minute))
		ch <- acquired{l, err}
	}()
	pollUntil(t, token+" queued everywhere", func() bool {
		for i, n := range tails(t, nodes) {
			if n <= before[i] {
				return false
			}
		}
		return true
	})
	return ch
}

// TestFairOrderSurvivesMinority: two clusters over the same nodes (two
// proxies); waiter a is queued, then one node loses a's entry (a minority
// disagrees), then b is queued, where b stands first on that node. The
// release still goes to a, then b.
func TestFairOrderSurvivesMinority(t *testing.T) {
	nodes := memNodes(3)
	c1, c2 := slowRetryCluster(t, nodes), slowRetryCluster(t, nodes)
	if _, err := c1.Acquire(t.Context(), fkey, "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	a := fairAsync(t, c1, nodes, context.Background(), "a")
	if rep := quorum.Call(t.Context(), nodes[2], quorum.Cmd{Kind: quorum.FairLeave, Key: fkey, Token: "a"}); !rep.OK {
		t.Fatalf("a was not queued on the third node: %+v", rep)
	}
	b := fairAsync(t, c2, nodes, context.Background(), "b")
	if ok, err := c1.Release(t.Context(), fkey, "h"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	got := recv(t, a, prompt)
	if got.err != nil {
		t.Fatalf("a: %v", got.err)
	}
	select {
	case r := <-b:
		t.Fatalf("b was granted while a holds the lock: %+v", r)
	default:
	}
	if ok, err := c1.Release(t.Context(), fkey, "a"); !ok || err != nil {
		t.Fatalf("Release a = %v, %v", ok, err)
	}
	if r := recv(t, b, prompt); r.err != nil || r.l.Token != "b" {
		t.Fatalf("b: %+v", r)
	}
}

// TestFairCancelLeavesQueue: a waiter whose caller is gone leaves the
// queue on every node at once, and a plain waiter that met the queue
// joined it behind.
func TestFairCancelLeavesQueue(t *testing.T) {
	nodes := memNodes(3)
	c := slowRetryCluster(t, nodes)
	if _, err := c.Acquire(t.Context(), fkey, "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := fairAsync(t, c, nodes, ctx, "a")
	before := tails(t, nodes)
	plain := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(context.Background(), fkey, "p", time.Minute, quorum.Wait(time.Minute))
		plain <- acquired{l, err}
	}()
	pollUntil(t, "the plain waiter joined the queue", func() bool { return tails(t, nodes)[0] > before[0] })
	cancel()
	if r := recv(t, a, prompt); !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, quorum.ErrNotAcquired) {
		t.Fatalf("cancelled waiter: %+v", r)
	}
	if ok, err := c.Release(t.Context(), fkey, "h"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := recv(t, plain, prompt); r.err != nil || r.l.Token != "p" {
		t.Fatalf("plain waiter: %+v", r)
	}
	for i, n := range tails(t, nodes) {
		if n != 0 {
			t.Errorf("node %d still queues ticket %d", i, n)
		}
	}
}

// TestTryFair: FAIR without WAIT takes a free key nobody waits for, and
// gets ErrNotAcquired while a waiter is queued.
func TestTryFair(t *testing.T) {
	nodes := memNodes(3)
	c := slowRetryCluster(t, nodes)
	if _, err := c.AcquireFair(t.Context(), fkey, "t", time.Minute); err != nil {
		t.Fatalf("TryFair of a free key: %v", err)
	}
	a := fairAsync(t, c, nodes, context.Background(), "a")
	if _, err := c.AcquireFair(t.Context(), fkey, "u", time.Minute); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("TryFair with a waiter queued: %v", err)
	}
	if _, err := c.Release(t.Context(), fkey, "t"); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, a, prompt); r.err != nil {
		t.Fatalf("a: %v", r.err)
	}
	if _, err := c.AcquireFair(t.Context(), fkey, "u", time.Minute); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("TryFair of a held key: %v", err)
	}
}

// TestFairFailedRoundUndone: a fair round that stored the lock on every
// node but heard back from one only is not granted, and is undone: no
// node keeps the token, and the waiter that gave up leaves nothing queued.
func TestFairFailedRoundUndone(t *testing.T) {
	mem := memNodes(3)
	lost := func(cmd quorum.Cmd, rep *quorum.Reply) {
		if cmd.Kind == quorum.FairAcquire && rep.OK {
			*rep = quorum.Reply{Err: errors.New("reply lost")}
		}
	}
	nodes := []quorum.Node{mem[0], &nodetest.Hooked{Node: mem[1], After: lost}, &nodetest.Hooked{Node: mem[2], After: lost}}
	c := slowRetryCluster(t, nodes)
	_, err := c.AcquireFair(t.Context(), fkey, "a", time.Minute, quorum.Wait(100*time.Millisecond))
	if !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("AcquireFair = %v, want a NoQuorumError", err)
	}
	for i, n := range mem {
		if rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.Get, Key: fkey}); rep.OK {
			t.Errorf("node %d keeps %q after the round was undone", i, rep.Token)
		}
	}
	for i, n := range tails(t, mem) {
		if n != 0 {
			t.Errorf("node %d still queues ticket %d", i, n)
		}
	}
}
