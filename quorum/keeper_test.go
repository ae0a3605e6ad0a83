package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

func TestKeepRenewsUntilStopped(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Renewed every 500 ms; the nodes expire the key 1.5 s after a
	// renewal, which leaves a busy machine room for a late one: this test
	// is not about that.
	k := c.Keep("k", "tok", 1500*time.Millisecond, 10*time.Second, func(err error) { t.Errorf("lost: %v", err) })
	for _, f := range fs {
		f.WaitAnswered(t, opCAE, 3) // renewed again and again
	}
	k.Stop(true)
	k.Stop(true) // twice is fine
	if got := holders(t, fs, "k", "tok"); len(got) != 0 {
		t.Fatalf("Stop(true) left the lock on %v", got)
	}
}

func TestKeepReportsLoss(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Second); err != nil {
		t.Fatal(err)
	}
	fs[0].SetOpFault(opCAE, errBoom)
	fs[1].SetOpFault(opCAE, errBoom)
	lost := make(chan error, 1)
	// The validity outlasts the first renewal's turn by far, so that a
	// loaded machine cannot let it run out before any renewal was tried
	// (that loss has no renewal's error to report).
	k := c.Keep("k", "tok", 30*time.Millisecond, 500*time.Millisecond, func(err error) { lost <- err })
	defer k.Stop(false)
	select {
	case err := <-lost:
		if !errors.Is(err, quorum.ErrNoQuorum) {
			t.Fatalf("loss reported as %v, want a NoQuorumError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a renewal without a majority was not reported")
	}
	n := fs[2].Calls(opCAE)
	k.Stop(false)
	if fs[2].Calls(opCAE) != n {
		t.Fatal("renewals went on after the loss")
	}
}

func TestKeepWhileHoldsOffRenewals(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Each renewal must get through before the nodes expire the key: 900
	// ms, not less, so that a loaded machine cannot make it lose the lock
	// first.
	const ttl = 900 * time.Millisecond
	k := c.Keep("k", "tok", ttl, ttl, func(err error) { t.Errorf("lost: %v", err) })
	fs[0].WaitAnswered(t, opCAE, 1) // the loop runs
	k.While(func() bool {
		n := fs[0].Calls(opCAE)
		<-time.After(4 * ttl / 3) // over three renewal periods
		if got := fs[0].Calls(opCAE); got != n {
			t.Errorf("%d renewals ran inside While", got-n)
		}
		// No renewal follows this release: it would find the lock gone.
		if _, err := c.Release(context.Background(), "k", "tok"); err != nil {
			t.Error(err)
		}
		return true
	})
	k.Stop(false)
}

// A renewal that fails deletes nothing and is tried again while the
// validity last reported runs; once the nodes answer again the lock is
// renewed as before and never reported lost.
func TestKeepRetriesWithinValidity(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	fs[0].SetOpFault(opCAE, errBoom)
	fs[1].SetOpFault(opCAE, errBoom)
	// Each failed renewal still extends the key on the third node, by a
	// ttl long enough that a loaded machine's pause between two tries
	// cannot let it expire there.
	k := c.Keep("k", "tok", 1500*time.Millisecond, time.Minute, func(err error) { t.Errorf("lost: %v", err) })
	defer k.Stop(false)
	n := fs[2].Calls(opCAE)
	fs[2].WaitAnswered(t, opCAE, n+4) // failed renewals, retried
	if got := holders(t, fs, "k", "tok"); len(got) != 3 {
		t.Fatalf("failed renewals removed the token: held on %v", got)
	}
	fs[0].SetOpFault(opCAE, nil)
	fs[1].SetOpFault(opCAE, nil)
	m := fs[0].Calls(opCAE)
	fs[0].WaitAnswered(t, opCAE, m+2) // renewed again
}

// When the validity runs out without a successful renewal the lock is
// lost, not before: the loss comes after the validity Keep was given.
func TestKeepLosesOnlyWhenValidityRunsOut(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	fs[0].SetOpFault(opCAE, errBoom)
	fs[1].SetOpFault(opCAE, errBoom)
	lost := make(chan error, 1)
	const valid = 400 * time.Millisecond
	start := time.Now()
	k := c.Keep("k", "tok", 60*time.Millisecond, valid, func(err error) { lost <- err })
	defer k.Stop(false)
	select {
	case err := <-lost:
		if since := time.Since(start); since < valid {
			t.Fatalf("lost after %v, within its validity of %v", since, valid)
		}
		if !errors.Is(err, quorum.ErrNotHeld) || !errors.Is(err, quorum.ErrNoQuorum) {
			t.Fatalf("loss reported as %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loss was never reported")
	}
	if fs[2].Calls(opCAE) < 3 {
		t.Fatal("no retries within the validity")
	}
}

// A renewal that wins a majority puts the lock back where it is missing,
// and never where another token holds the key.
func TestKeepRestoresWhereMissing(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	put(t, fs[0], "k", "tok", time.Minute)
	put(t, fs[1], "k", "tok", time.Minute)
	put(t, fs[2], "k", "other", time.Minute)
	// The renewals' ttl is long enough that a loaded machine's pause
	// cannot let the key expire on the two nodes that hold it.
	k := c.Keep("k", "tok", 600*time.Millisecond, time.Minute, func(err error) { t.Errorf("lost: %v", err) })
	defer k.Stop(false)
	fs[0].WaitAnswered(t, opCAE, 2)
	fs[2].WaitAnswered(t, opCAE, 2)
	if e := peek(t, fs[2], "k"); e.token != "other" {
		t.Fatalf("a restore overwrote another token: %+v", e)
	}
	drop(t, fs[2], "k") // the key is gone, as after a restart
	waitFor(t, "the lock is restored on the node that lost it", func() bool {
		e := peek(t, fs[2], "k")
		return e.ok && e.token == "tok"
	})
}
