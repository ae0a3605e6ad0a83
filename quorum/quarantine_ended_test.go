package quorum_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// countedCluster is watchedCluster whose clock counts its readings.
func countedCluster(t *testing.T, quarantine time.Duration) (*quorum.Cluster, []*watchedNode, *clock, *atomic.Int64) {
	t.Helper()
	var reads atomic.Int64
	c, ws, clk := unseenClusterReading(t, quarantine, func(now func() time.Time) func() time.Time {
		return func() time.Time { reads.Add(1); return now() }
	})
	t.Cleanup(func() { c.Close() })
	for i, w := range ws {
		w.look("r"+string(rune('0'+i)), "master", 0)
	}
	return c, ws, clk, &reads
}

// readsPerAcquire is how often one acquire and release of a fresh key
// read c's clock.
func readsPerAcquire(t *testing.T, c *quorum.Cluster, reads *atomic.Int64, key string) int64 {
	t.Helper()
	before := reads.Load()
	if _, err := c.Acquire(context.Background(), key, "tok", time.Second); err != nil {
		t.Fatalf("Acquire(%s) = %v", key, err)
	}
	if _, err := c.Release(context.Background(), key, "tok"); err != nil {
		t.Fatalf("Release(%s) = %v", key, err)
	}
	return reads.Load() - before
}

// TestEndedQuarantineCostsNoClockReading: once a node's quarantine has
// ended, its votes read the clock no more often than those of a node
// never quarantined; and a restart after that quarantines it again.
func TestEndedQuarantineCostsNoClockReading(t *testing.T) {
	never, _, _, neverReads := countedCluster(t, time.Minute)
	readsPerAcquire(t, never, neverReads, "warm")
	want := readsPerAcquire(t, never, neverReads, "k")

	c, ws, clk, reads := countedCluster(t, time.Minute)
	ws[0].look("r0-restarted", "master", 0)
	lockNeedsNodeA(ws)
	if _, err := c.Acquire(context.Background(), "q", "tok", time.Second); !errors.Is(err, quorum.ErrQuarantined) {
		t.Fatalf("Acquire while quarantined = %v, want ErrQuarantined", err)
	}
	ws[1].SetFault(nil)
	clk.advance(time.Minute)
	readsPerAcquire(t, c, reads, "first after the end")
	if got := readsPerAcquire(t, c, reads, "k"); got != want {
		t.Errorf("an acquire and release after the quarantine ended read the clock %d times, one never quarantined %d", got, want)
	}

	ws[0].look("r0-restarted-again", "master", 0)
	lockNeedsNodeA(ws)
	if _, err := c.Acquire(context.Background(), "again", "tok", time.Second); !errors.Is(err, quorum.ErrQuarantined) {
		t.Fatalf("Acquire after a second restart = %v, want ErrQuarantined", err)
	}
}
