package quorum_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

func retryConfig() quorum.Config {
	cfg := testConfig()
	cfg.ReleaseRetry = 10 * time.Millisecond
	return cfg
}

func closedCluster(t *testing.T, nodes []quorum.Node, cfg quorum.Config) *quorum.Cluster {
	t.Helper()
	c := newCluster(t, nodes, cfg)
	t.Cleanup(func() { c.Close() })
	return c
}

func totalPending(c *quorum.Cluster) int {
	n := 0
	for _, p := range c.PendingReleases() {
		n += p
	}
	return n
}

// A release that one node did not answer is sent again once it answers.
func TestReleaseRetriedOnNodeThatFailed(t *testing.T) {
	for _, mode := range []struct {
		name string
		// fail makes the node's compare-and-deletes fail, or not.
		fail func(f *faultnode.Node, on bool)
	}{
		{"error", func(f *faultnode.Node, on bool) {
			if on {
				f.SetOpFault(opCAD, errBoom)
			} else {
				f.SetOpFault(opCAD, nil)
			}
		}},
		{"stall", func(f *faultnode.Node, on bool) {
			if on {
				f.SetOpDelay(opCAD, stall)
			} else {
				f.SetOpDelay(opCAD, 0)
			}
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			fs, nodes := newNodes(3)
			c := closedCluster(t, nodes, retryConfig())
			l, err := c.Acquire(context.Background(), key, mine, ttl)
			if err != nil {
				t.Fatal(err)
			}
			waitAll(t, fs, opSetNX, 1)
			mode.fail(fs[0], true)
			if ok, err := c.Release(context.Background(), key, l.Token); !ok || err != nil {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			if got := c.PendingReleases(); !slices.Equal(got, []int{1, 0, 0}) {
				t.Errorf("PendingReleases = %v, want [1 0 0]", got)
			}
			if h := holders(t, fs, key, mine); !slices.Equal(h, []string{"n0"}) {
				t.Fatalf("holders after release = %v, want [n0]", h)
			}
			fs[0].WaitAnswered(t, opCAD, 2) // retried while still failing
			mode.fail(fs[0], false)
			waitFor(t, "the retry removes n0's copy", func() bool {
				return len(holders(t, fs, key, mine)) == 0 && totalPending(c) == 0
			})
		})
	}
}

// ReleaseRetry 0 turns the retries off: nothing is remembered.
func TestReleaseRetryOff(t *testing.T) {
	fs, nodes := newNodes(3)
	c := closedCluster(t, nodes, testConfig())
	l, err := c.Acquire(context.Background(), key, mine, ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitAll(t, fs, opSetNX, 1)
	fs[0].SetOpFault(opCAD, errBoom)
	if ok, err := c.Release(context.Background(), key, l.Token); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if got := totalPending(c); got != 0 {
		t.Errorf("PendingReleases = %v with retries off", c.PendingReleases())
	}
}

// A failed acquire whose SET did not answer on a node is checked again
// there, since the SET may land after the release: the late copy is
// removed, and nothing of another holder is touched.
func TestFailedAcquireLateSetRemoved(t *testing.T) {
	fs, nodes := newNodes(3)
	c := closedCluster(t, nodes, retryConfig())
	fs[0].SetOpFault(opSetNX, errBoom)
	put(t, fs[1], key, other, ttl)
	var late sync.Once
	fs[0].OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
		if cmd.Kind == quorum.CompareAndDelete {
			late.Do(func() { put(t, fs[0], cmd.Key, cmd.Token, ttl) }) // the SET lands just after the release
		}
	})
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err == nil {
		t.Fatal("acquire with one grant of three succeeded")
	}
	if h := holders(t, fs, key, mine); !slices.Equal(h, []string{"n0"}) {
		t.Fatalf("holders after the failed acquire = %v, want the late copy on n0", h)
	}
	waitFor(t, "the late SET is removed", func() bool {
		return len(holders(t, fs, key, mine)) == 0 && totalPending(c) == 0
	})
	if h := holders(t, fs, key, other); !slices.Equal(h, []string{"n1"}) {
		t.Errorf("other token on %v, want [n1]", h)
	}
}

// A SET that never lands ends the entry after two answers of "absent".
func TestPendingEndsWhenAbsentTwice(t *testing.T) {
	fs, nodes := newNodes(3)
	c := closedCluster(t, nodes, retryConfig())
	fs[0].SetOpFault(opSetNX, errBoom)
	fs[1].SetOpFault(opSetNX, errBoom)
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err == nil {
		t.Fatal("acquire with one grant of three succeeded")
	}
	waitFor(t, "entries end", func() bool { return totalPending(c) == 0 })
	for _, f := range fs[:2] {
		if n := f.Calls(opCAD); n < 2 {
			t.Errorf("%s: %d compare-and-deletes, want the release and at least one check", f.Name(), n)
		}
	}
}

// A successful lock is never touched by the retries, even on a node whose
// SET did not answer in time.
func TestHeldLockNotRetried(t *testing.T) {
	fs, nodes := newNodes(3)
	c := closedCluster(t, nodes, retryConfig())
	fs[0].SetOpFault(opSetNX, errBoom)
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err != nil {
		t.Fatal(err)
	}
	if got := totalPending(c); got != 0 {
		t.Errorf("PendingReleases = %v after a granted lock", c.PendingReleases())
	}
}

// The record is bounded per node: the oldest entries go first, and those
// past their ttl are dropped without a call.
func TestPendingBounded(t *testing.T) {
	fs, nodes := newNodes(1)
	c := closedCluster(t, nodes, retryConfig())
	c.SetPendingLimit(3)
	fs[0].SetOpFault(opCAD, errBoom)
	for i := range 5 {
		c.AddPending(0, fmt.Sprint("k", i), mine, time.Hour)
	}
	if keys := c.PendingKeys(0); !slices.Equal(keys, []string{"k2", "k3", "k4"}) {
		t.Errorf("kept %v, want the newest three", keys)
	}
	c.Close()

	fs2, nodes2 := newNodes(1)
	c2 := closedCluster(t, nodes2, retryConfig())
	c2.AddPending(0, "gone", mine, time.Nanosecond)
	waitFor(t, "the expired entry is dropped", func() bool { return totalPending(c2) == 0 })
	if n := fs2[0].Calls(opCAD); n != 0 {
		t.Errorf("%d calls for an expired entry", n)
	}
}

// Close stops the retries, is safe twice, and leaves no goroutine behind
// (goleak checks the package).
func TestCloseStopsRetries(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, retryConfig())
	fs[0].SetOpDelay(opCAD, stall)
	l, err := c.Acquire(context.Background(), key, mine, ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitAll(t, fs, opSetNX, 1)
	c.Release(context.Background(), key, l.Token)
	fs[0].WaitAnswered(t, opCAD, 2)
	c.Close()
	c.Close()
	var mu sync.Mutex
	after := map[string]int{} // CompareAndDelete calls on node 0 since Close, by key
	fs[0].OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
		if cmd.Kind == quorum.CompareAndDelete {
			mu.Lock()
			after[cmd.Key]++
			mu.Unlock()
		}
	})
	fs[0].SetOpDelay(opCAD, 0)
	// The negative is proven by a later event: another cluster's retry,
	// queued now with the same interval, reaches node 0 after the closed
	// cluster's next round would have (that one was due first).
	other := newCluster(t, nodes, retryConfig())
	put(t, fs[0], "later", mine, time.Minute)
	other.AddPending(0, "later", mine, time.Minute)
	waitFor(t, "the other cluster's retry", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return after["later"] > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if n := after[key]; n != 0 {
		t.Errorf("%d calls for %s after Close, want none", n, key)
	}
}

// The queued undo of a failed round never removes what a later round of
// the same token granted: a blocking acquire keeps its token between
// rounds, and a client retrying SET NX keeps its value. Here round one
// fails with n0 and n1 cut off and its release to n0 is queued; round two,
// same token, is granted on every node while that release still waits;
// then n0 answers again and the queued release must not land.
func TestQueuedUndoSparesLaterGrantOfSameToken(t *testing.T) {
	fs, nodes := newNodes(3)
	c := closedCluster(t, nodes, retryConfig())
	for _, f := range fs[:2] {
		f.SetOpFault(opSetNX, errBoom)
	}
	fs[0].SetOpFault(opCAD, errBoom)
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err == nil {
		t.Fatal("round one was granted with two of three nodes cut off")
	}
	if got := c.PendingReleases(); got[0] == 0 {
		t.Fatalf("PendingReleases = %v, want n0's release queued", got)
	}
	fs[0].WaitAnswered(t, opCAD, 3) // the queued release is being retried
	for _, f := range fs[:2] {
		f.SetOpFault(opSetNX, nil)
	}
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err != nil {
		t.Fatalf("round two: %v", err)
	}
	fs[0].SetOpFault(opCAD, nil)
	waitFor(t, "nothing queued", func() bool { return totalPending(c) == 0 })
	if h := holders(t, fs, key, mine); !slices.Equal(h, []string{"n0", "n1", "n2"}) {
		t.Fatalf("holders of round two's grant = %v, want [n0 n1 n2]", h)
	}
}
