package quorum_test

import (
	"context"
	"errors"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// memCluster is a cluster over three in-memory nodes, each of which may
// be failed.
func memCluster(t *testing.T) (*quorum.Cluster, []*faultnode.Node) {
	t.Helper()
	mems, nodes := newNodes(3)
	return newCluster(t, nodes, quorum.DefaultConfig()), mems
}

// One node down is tolerated by every script operation; two are a
// NoQuorumError, never a false "no".
func TestScriptOpsQuorum(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(c *quorum.Cluster) error{
		"AcquireAll": func(c *quorum.Cluster) error {
			_, err := c.AcquireAll(ctx, []string{"a", "b"}, "t", time.Second)
			return err
		},
		"ExtendAll": func(c *quorum.Cluster) error {
			_, err := c.ExtendAll(ctx, []string{"a", "b"}, "t", 2*time.Second)
			return err
		},
		"ExtendAdd": func(c *quorum.Cluster) error {
			_, err := c.ExtendAdd(ctx, "a", "t", time.Second, time.Minute)
			return err
		},
		"ExtendOrAcquire": func(c *quorum.Cluster) error {
			_, err := c.ExtendOrAcquire(ctx, "c", "t", time.Second)
			return err
		},
		"ReleaseStatus": func(c *quorum.Cluster) error {
			r, err := c.ReleaseStatus(ctx, "c", "t")
			if err == nil && r != quorum.Released {
				return errors.New("not released")
			}
			return err
		},
	}
	order := []string{"AcquireAll", "ExtendAll", "ExtendAdd", "ExtendOrAcquire", "ReleaseStatus"}
	c, mems := memCluster(t)
	mems[0].SetFault(errors.New("down"))
	for _, name := range order {
		if err := ops[name](c); err != nil {
			t.Fatalf("%s with one node down: %v", name, err)
		}
	}
	c, mems = memCluster(t)
	mems[0].SetFault(errors.New("down"))
	mems[1].SetFault(errors.New("down"))
	for _, name := range order {
		if err := ops[name](c); !errors.Is(err, quorum.ErrNoQuorum) {
			t.Fatalf("%s with two nodes down: %v, want NoQuorum", name, err)
		}
	}
}

func TestReleaseStatusVerdicts(t *testing.T) {
	ctx := context.Background()
	c, mems := memCluster(t)
	if r, err := c.ReleaseStatus(ctx, "k", "t"); r != quorum.ReleasedAbsent || err != nil {
		t.Fatalf("absent: %v, %v", r, err)
	}
	for _, m := range mems[:2] {
		nodetest.SetNX(ctx, m, "k", "other", time.Minute)
	}
	if r, err := c.ReleaseStatus(ctx, "k", "t"); r != quorum.ReleasedOther || err != nil {
		t.Fatalf("held by another token: %v, %v", r, err)
	}
}

// A failed multi-key extend deletes nothing: the keys that were held stay
// held, with the token, until the validity reported before.
func TestExtendAllFailureKeepsTheLock(t *testing.T) {
	ctx := context.Background()
	c, mems := memCluster(t)
	if _, err := c.AcquireAll(ctx, []string{"a", "b"}, "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExtendAll(ctx, []string{"a", "b", "c"}, "t", time.Minute); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("ExtendAll over a key never taken: %v, want ErrNotHeld", err)
	}
	for _, m := range mems {
		for _, k := range []string{"a", "b"} {
			if tok, _, held, _ := nodetest.Get(ctx, m, k); !held || tok != "t" {
				t.Fatalf("%s: %s = %q (held %v) after a failed extend, want the token kept", m.Name(), k, tok, held)
			}
		}
	}
}

// A failed touch-or-acquire (go-redsync's extend with SET NX) takes back
// the keys it acquired in that round and keeps those it only extended.
func TestExtendOrAcquireFailureUndoesOnlyItsGrants(t *testing.T) {
	ctx := context.Background()
	c, mems := memCluster(t)
	nodetest.SetNX(ctx, mems[0], "k", "t", time.Minute)     // held before: extended
	nodetest.SetNX(ctx, mems[1], "k", "other", time.Minute) // another's: refused
	mems[2].Close()                                         // down: the round fails
	if _, err := c.ExtendOrAcquire(ctx, "k", "t", time.Minute); err == nil {
		t.Fatal("ExtendOrAcquire with one of three nodes for it succeeded")
	}
	if tok, _, held, _ := nodetest.Get(ctx, mems[0], "k"); !held || tok != "t" {
		t.Fatalf("the node that extended lost the token: %q held %v", tok, held)
	}
	if tok, _, _, _ := nodetest.Get(ctx, mems[1], "k"); tok != "other" {
		t.Fatalf("another token was touched: %q", tok)
	}
}
