package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// renewRunFor is how long the RENEW stress runs: long enough for many
// failed renewals in CI, a minute under REDLOCKD_LONG=1.
func renewRunFor() time.Duration {
	if long() {
		return time.Minute
	}
	return 12 * time.Second
}

// TestRenewUnderFaults: clients on two redlockd processes take locks and
// RENEW them in the middle of their critical sections, while backends are
// SIGSTOPped one at a time and the proxies are paused now and then. A
// client whose RENEW fails keeps its claim until the validity it was last
// told (its section stays open until then) and walks away without
// UNLOCK. No other client may be granted the key within that claim.
func TestRenewUnderFaults(t *testing.T) {
	servers := redistest.StartN(t, 3)
	bin := redlocktest.Build(t, "./cmd/redlockd")
	procs := []*redlocktest.Process{
		redlocktest.StartProcess(t, bin, servers, "--node-timeout", "50ms"),
		redlocktest.StartProcess(t, bin, servers, "--node-timeout", "50ms"),
	}
	rec := check.NewRecorder()
	var renews, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		c := respClient(t, procs[i%2].Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			renewLoop(c, rec, fmt.Sprintf("c%d@%d", i, i%2), i, stop, &renews, &failed)
		}()
	}
	injectFaults(t, servers, procs, renewRunFor())
	close(stop)
	wg.Wait()
	res := rec.Check()
	t.Logf("renews=%d failed=%d %v", renews.Load(), failed.Load(), res)
	for _, o := range res.Overlaps {
		t.Errorf("overlap: %v", o)
	}
	if res.Acquired == 0 || renews.Load() == 0 {
		t.Fatalf("nothing was locked and renewed: %v", res)
	}
}

// injectFaults SIGSTOPs one backend at a time for up to 300ms, and every
// few rounds pauses one proxy for up to 200ms, until d has passed; every
// process runs again when it returns.
func injectFaults(t *testing.T, servers []*redistest.Server, procs []*redlocktest.Process, d time.Duration) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	pause := func(max time.Duration) { time.Sleep(time.Duration(rng.Int64N(int64(max)))) } // the fault's length
	for end, n := time.Now().Add(d), 0; time.Now().Before(end); n++ {
		s := servers[rng.IntN(len(servers))]
		s.Stop()
		pause(300 * time.Millisecond)
		s.Cont()
		if n%4 == 3 {
			p := procs[rng.IntN(len(procs))]
			p.Pause(t)
			pause(200 * time.Millisecond)
			p.Resume(t)
		}
		pause(100 * time.Millisecond)
	}
}

// renewLoop: LOCK, work, RENEW, work, UNLOCK, over two keys. After a
// failed RENEW the section is closed at the deadline it already had.
func renewLoop(c *redis.Client, rec *check.Recorder, name string, seed int, stop <-chan struct{}, renews, failed *atomic.Int64) {
	ctx := context.Background()
	const ttl = 800 * time.Millisecond
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(time.Now().UnixNano())))
	for n := seed; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("renew:%d", n%2)
		t0 := time.Now()
		tok, validity, ok, err := lock(ctx, c, key, ttl)
		got := time.Now()
		rec.Attempt(t0, got, ok, errClassRESP(err, ok))
		if !ok {
			time.Sleep(time.Duration(rng.Int64N(int64(10 * time.Millisecond)))) // pacing, not a hot loop
			continue
		}
		h := rec.Begin(name, key, t0, got, validity)
		h.Increment(50 * time.Microsecond)
		// The section's work takes a while, so that the backends that
		// answer the RENEW are often not those that granted the LOCK.
		time.Sleep(time.Duration(rng.Int64N(int64(ttl / 3))))
		r0 := time.Now()
		ms, err := c.Do(ctx, "RENEW", key, tok, ttl.Milliseconds()).Int64()
		renews.Add(1)
		if err != nil {
			failed.Add(1)
			h.EndAt(h.Deadline()) // the claim runs to the validity last told
			continue
		}
		h.Renewed(r0, time.Duration(ms)*time.Millisecond)
		h.Increment(50 * time.Microsecond)
		h.End()
		c.Do(ctx, "UNLOCK", key, tok)
	}
}

func errClassRESP(err error, ok bool) string {
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case err != nil:
		return "error"
	case !ok:
		return "contended"
	}
	return ""
}
