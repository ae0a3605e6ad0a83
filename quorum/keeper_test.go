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
	k := c.Keep("k", "tok", 30*time.Millisecond, func(err error) { t.Errorf("lost: %v", err) })
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
	k := c.Keep("k", "tok", 30*time.Millisecond, func(err error) { lost <- err })
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
	k := c.Keep("k", "tok", 30*time.Millisecond, func(err error) { t.Errorf("lost: %v", err) })
	fs[0].waitCalls(t, opCAE, 1) // the loop runs
	k.While(func() bool {
		n := fs[0].callCount(opCAE)
		<-time.After(100 * time.Millisecond) // over three renewal periods
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
