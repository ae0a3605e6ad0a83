package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestKeepRenewsUntilStopped(t *testing.T) {
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Second); err != nil {
		t.Fatal(err)
	}
	// Renewed every 200 ms; 600 ms of validity leaves a busy machine room
	// for a late renewal, which this test is not about.
	k := c.Keep("k", "tok", 600*time.Millisecond, 600*time.Millisecond, func(err error) { t.Errorf("lost: %v", err) })
	for _, f := range fs {
		f.waitCalls(t, opCAE, 3) // renewed again and again
	}
	k.Stop(true)
	k.Stop(true) // twice is fine
	if got := holders(fs, "k", "tok"); len(got) != 0 {
		t.Fatalf("Stop(true) left the lock on %v", got)
	}
}

func TestKeepReportsLoss(t *testing.T) {
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Second); err != nil {
		t.Fatal(err)
	}
	fs[0].setOpBehavior(opCAE, behaveErr)
	fs[1].setOpBehavior(opCAE, behaveErr)
	lost := make(chan error, 1)
	// The validity outlasts the first renewal's turn by far, so that a
	// loaded machine cannot let it run out before any renewal was tried
	// (that loss has no renewal's error to report).
	k := c.Keep("k", "tok", 30*time.Millisecond, 500*time.Millisecond, func(err error) { lost <- err })
	defer k.Stop(false)
	select {
	case err := <-lost:
		if !errors.Is(err, ErrNoQuorum) {
			t.Fatalf("loss reported as %v, want a NoQuorumError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a renewal without a majority was not reported")
	}
	n := fs[2].callCount(opCAE)
	k.Stop(false)
	if fs[2].callCount(opCAE) != n {
		t.Fatal("renewals went on after the loss")
	}
}

func TestKeepWhileHoldsOffRenewals(t *testing.T) {
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Second); err != nil {
		t.Fatal(err)
	}
	// The first renewal must get through within the validity: 300ms, not
	// less, so that a loaded machine cannot make it lose the lock first.
	const ttl = 300 * time.Millisecond
	k := c.Keep("k", "tok", ttl, ttl, func(err error) { t.Errorf("lost: %v", err) })
	fs[0].waitCalls(t, opCAE, 1) // the loop runs
	k.While(func() bool {
		n := fs[0].callCount(opCAE)
		<-time.After(4 * ttl / 3) // over three renewal periods
		if got := fs[0].callCount(opCAE); got != n {
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
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	fs[0].setOpBehavior(opCAE, behaveErr)
	fs[1].setOpBehavior(opCAE, behaveErr)
	k := c.Keep("k", "tok", 300*time.Millisecond, time.Minute, func(err error) { t.Errorf("lost: %v", err) })
	defer k.Stop(false)
	n := fs[2].callCount(opCAE)
	fs[2].waitCalls(t, opCAE, n+4) // failed renewals, retried
	if got := holders(fs, "k", "tok"); len(got) != 3 {
		t.Fatalf("failed renewals removed the token: held on %v", got)
	}
	fs[0].setOpBehavior(opCAE, behaveOK)
	fs[1].setOpBehavior(opCAE, behaveOK)
	m := fs[0].callCount(opCAE)
	fs[0].waitCalls(t, opCAE, m+2) // renewed again
}

// When the validity runs out without a successful renewal the lock is
// lost, not before: the loss comes after the validity Keep was given.
func TestKeepLosesOnlyWhenValidityRunsOut(t *testing.T) {
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), "k", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	fs[0].setOpBehavior(opCAE, behaveErr)
	fs[1].setOpBehavior(opCAE, behaveErr)
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
		if !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrNoQuorum) {
			t.Fatalf("loss reported as %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loss was never reported")
	}
	if fs[2].callCount(opCAE) < 3 {
		t.Fatal("no retries within the validity")
	}
}

// A renewal that wins a majority puts the lock back where it is missing,
// and never where another token holds the key.
func TestKeepRestoresWhereMissing(t *testing.T) {
	fs, nodes := newFakes(3)
	c := newCluster(t, nodes, testConfig())
	fs[0].put("k", "tok", time.Minute)
	fs[1].put("k", "tok", time.Minute)
	fs[2].put("k", "other", time.Minute)
	k := c.Keep("k", "tok", 60*time.Millisecond, time.Minute, func(err error) { t.Errorf("lost: %v", err) })
	fs[0].waitCalls(t, opCAE, 2)
	if e, _ := fs[2].peek("k"); e.token != "other" {
		t.Fatalf("a restore overwrote another token: %+v", e)
	}
	fs[2].drop("k") // the key is gone, as after a restart
	n := fs[2].callCount(opSetNX)
	fs[2].waitCalls(t, opSetNX, n+1)
	k.Stop(false)
	if e, ok := fs[2].peek("k"); !ok || e.token != "tok" {
		t.Fatalf("the lock was not restored on the node that lost it: %+v", e)
	}
}
