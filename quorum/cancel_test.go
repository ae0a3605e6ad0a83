package quorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// stalledCluster is a cluster of three embedded nodes of which two hold
// every command, once armed, until the test ends: a majority that does
// not answer within the NodeTimeout of a minute. The first held command
// cancels ctx; open lets the held commands run.
type stalledCluster struct {
	c     *quorum.Cluster
	nodes []quorum.Node
	arm   func()
	open  func()
	ctx   context.Context
}

func newStalledCluster(t *testing.T) *stalledCluster {
	t.Helper()
	mem := memNodes(3)
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{})
	var mu sync.Mutex
	armed := false
	var once sync.Once
	s := &stalledCluster{ctx: ctx, nodes: mem}
	s.arm = func() { mu.Lock(); armed = true; mu.Unlock() }
	s.open = func() { once.Do(func() { close(gate) }) }
	hold := func(ctx context.Context, _ quorum.Cmd) error {
		mu.Lock()
		held := armed
		mu.Unlock()
		if !held {
			return nil
		}
		cancel()
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	nodes := []quorum.Node{mem[0], &nodetest.Hooked{Node: mem[1], Before: hold}, &nodetest.Hooked{Node: mem[2], Before: hold}}
	c := slowRetryClusterTimeout(t, nodes, time.Minute)
	s.c = c
	t.Cleanup(func() {
		cancel()
		s.open()
		_ = c.Close()
	})
	return s
}

// TestCancelEndsRoundWait: every operation that reads or extends stops
// waiting for its round's replies when the caller's ctx ends: with two of
// three nodes stalled for a minute, each returns ctx's error as soon as
// the stall cancels it, where otherwise it would return a NoQuorumError
// once the NodeTimeout passed.
func TestCancelEndsRoundWait(t *testing.T) {
	const key, token = "cancel-key", "cancel-token"
	tests := []struct {
		name string
		run  func(ctx context.Context, c *quorum.Cluster) error
	}{
		{"Get", func(ctx context.Context, c *quorum.Cluster) error { _, err := c.Get(ctx, key); return err }},
		{"Expire", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.Expire(ctx, key, time.Minute)
			return err
		}},
		{"Extend", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.Extend(ctx, key, token, time.Minute)
			return err
		}},
		{"Renew", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.Renew(ctx, key, token, time.Minute)
			return err
		}},
		{"RenewKept", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.RenewKept(ctx, key, token, time.Minute)
			return err
		}},
		{"ExtendAdd", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.ExtendAdd(ctx, key, token, time.Second, time.Minute)
			return err
		}},
		{"ExtendOrAcquire", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.ExtendOrAcquire(ctx, key, token, time.Minute)
			return err
		}},
		{"ExtendAll", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.ExtendAll(ctx, []string{key}, token, time.Minute)
			return err
		}},
		{"Fence", func(ctx context.Context, c *quorum.Cluster) error {
			_, err := c.Fence(ctx, &quorum.Lock{Key: key, Token: token, Validity: time.Minute})
			return err
		}},
		{"Inspect", func(ctx context.Context, c *quorum.Cluster) error {
			in := c.Inspect(ctx, key)
			if in.Answered != 0 {
				return errors.New("a cancelled Inspect counts answers")
			}
			return in.Nodes[0].Err
		}},
		{"Eval", func(ctx context.Context, c *quorum.Cluster) error {
			s := &quorum.Script{Src: "return 1", SHA: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}
			_, err := c.Eval(ctx, s, []string{key}, nil, false)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStalledCluster(t)
			if _, err := s.c.Acquire(t.Context(), key, token, time.Minute); err != nil {
				t.Fatal(err)
			}
			s.arm()
			if err := tt.run(s.ctx, s.c); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s with its ctx cancelled mid-round = %v, want context.Canceled", tt.name, err)
			}
		})
	}
}

// TestCancelledForceSetUndone: a ForceSet whose caller left mid-round is
// not left behind when its grant lands after all: the grant is undone
// as a failed round's is.
func TestCancelledForceSetUndone(t *testing.T) {
	const key, token = "force-key", "force-token"
	s := newStalledCluster(t)
	s.arm()
	if _, err := s.c.ForceSet(s.ctx, key, token, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForceSet with its ctx cancelled mid-round = %v, want context.Canceled", err)
	}
	// Let the held nodes run the SET; the late grant's undo follows.
	s.open()
	pollUntil(t, "the late ForceSet undone on every node", func() bool {
		for _, n := range s.nodes {
			if rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.Get, Key: key}); rep.OK {
				return false
			}
		}
		return true
	})
}

// TestCancelEndsInspection: LOCKINFO's per-node reads stop waiting when
// the caller's ctx ends, and then count no node, not even the one that
// answered (each read holds a lock on every node first).
func TestCancelEndsInspection(t *testing.T) {
	const key = "inspect-key"
	tests := []struct {
		name string
		lock func(c *quorum.Cluster) error
		read func(ctx context.Context, c *quorum.Cluster) []int
	}{
		{"SharedReaders", func(c *quorum.Cluster) error {
			_, err := c.AcquireShared(context.Background(), key, time.Minute)
			return err
		}, func(ctx context.Context, c *quorum.Cluster) []int {
			var out []int
			for _, n := range c.SharedReaders(ctx, key) {
				out = append(out, int(n))
			}
			return out
		}},
		{"InspectPermits", func(c *quorum.Cluster) error {
			_, err := c.AcquirePermit(context.Background(), key, 2, time.Minute)
			return err
		}, func(ctx context.Context, c *quorum.Cluster) []int {
			return c.InspectPermits(ctx, key, 2).Nodes
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStalledCluster(t)
			if err := tt.lock(s.c); err != nil {
				t.Fatal(err)
			}
			s.arm()
			got := tt.read(s.ctx, s.c)
			for i, n := range got {
				if n != -1 {
					t.Fatalf("%s with its ctx cancelled mid-round = %v, want no node counted (node %d counts %d)", tt.name, got, i, n)
				}
			}
		})
	}
}
