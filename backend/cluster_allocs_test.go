package backend

import (
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/raceflag"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// A lock and its release, as the proxy's fast path runs them (AcquireAsync
// and ReleaseAsync of a plain token), over three real servers: once the
// pools are filled, the quorum's rounds and the nodes' calls are all
// reused, and the pair allocates nothing; nor does a refused lock.
func TestClusterLockUnlockAllocs(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	nodes := make([]quorum.Node, 3)
	for i := range nodes {
		// No health check within the count.
		r, err := NewRedis(redistest.Start(t).Addr(), RedisOptions{HealthInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		nodes[i] = r
	}
	const timeout = 300 * time.Millisecond
	c := clusterOf(t, nodes, func(cfg *quorum.Config) { cfg.NodeTimeout = timeout })
	defer c.Close()
	var wg sync.WaitGroup
	var lockErr error
	var released bool
	locked := func(_ quorum.Lock, err error) { lockErr = err; wg.Done() }
	unlocked := func(ok bool, _ error) { released = ok; wg.Done() }
	pair := func() {
		wg.Add(1)
		c.AcquireAsync(nil, quorum.SetNX, "k", "tok", time.Minute, locked)
		wg.Wait()
		wg.Add(1)
		c.ReleaseAsync(nil, "k", "tok", unlocked)
		wg.Wait()
	}
	// The nodes' lines let go of their calls once their deadline passed.
	for range 300 {
		pair()
	}
	time.Sleep(2 * timeout)
	// An allocation the path makes shows in every measurement; one that a
	// collection emptying the pools (or a node late on a loaded machine)
	// causes does not: the least of three measurements is the path's.
	allocs := testing.AllocsPerRun(100, pair)
	for try := 1; try < 3 && allocs > 0; try++ {
		allocs = min(allocs, testing.AllocsPerRun(100, pair))
	}
	if lockErr != nil || !released {
		t.Fatalf("lock: %v, released: %v", lockErr, released)
	}
	t.Logf("AcquireAsync and ReleaseAsync over three servers: %.1f allocations", allocs)
	if allocs > 0 {
		t.Errorf("a lock and its release allocate %.1f times, budget 0", allocs)
	}

	// A lock refused (the key is held by another token) costs nothing
	// either: nothing is undone.
	wg.Add(1)
	c.AcquireAsync(nil, quorum.SetNX, "held", "other", time.Minute, locked)
	wg.Wait()
	if lockErr != nil {
		t.Fatalf("lock of held: %v", lockErr)
	}
	refused := func() {
		wg.Add(1)
		c.AcquireAsync(nil, quorum.SetNX, "held", "tok", time.Minute, locked)
		wg.Wait()
	}
	for range 300 {
		refused()
	}
	time.Sleep(2 * timeout)
	allocs = testing.AllocsPerRun(100, refused)
	if lockErr != quorum.ErrNotAcquired {
		t.Fatalf("lock of a held key: %v", lockErr)
	}
	t.Logf("refused AcquireAsync over three servers: %.1f allocations", allocs)
	if allocs > 0 {
		t.Errorf("a refused lock allocates %.1f times, budget 0", allocs)
	}
}
