package faulttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

const stressPermits = 2

// TestPermitsBoundUnderRestart: clients on two proxies take permits of
// two semaphores of two permits each, while a minority backend is killed
// and comes back empty (the restart quarantine keeps it out until the
// permits it lost have expired). The history never has more than two
// holders of a key; and it does have two at once, or the bound was never
// tested (the checker with a limit of one sees them).
func TestPermitsBoundUnderRestart(t *testing.T) {
	backends := redistest.StartN(t, 3)
	opts := redlocktest.Options{NodeTimeout: 200 * time.Millisecond, Quorum: func(c *quorum.Config) {
		c.RestartQuarantine = quorum.QuarantineAuto
		c.RetryDelayMin, c.RetryDelayMax = time.Millisecond, 5*time.Millisecond
	}}
	addrs := []string{
		redlocktest.StartOver(t, backends, opts).Addr,
		redlocktest.StartOver(t, backends, opts).Addr,
	}
	rec := check.NewRecorder()
	dur := max(runFor(), 3*time.Second)
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i := range 8 {
		c := respClient(t, addrs[i%len(addrs)])
		wg.Go(func() { permitLoop(c, rec, fmt.Sprintf("c%d@%d", i, i%len(addrs)), stop) })
	}
	granted := func(k int) func() bool { return func() bool { return len(rec.Sections()) >= k } }
	eventually(t, dur, "permits granted before the crash", granted(100))
	backends[2].Kill()
	down := len(rec.Sections())
	eventually(t, dur, "permits granted with a backend down", granted(down+100))
	backends[2].Restart(t)
	wg.Wait()
	sections := rec.Sections()
	limit := func(string) int { return stressPermits }
	if crowds := check.Crowds(sections, limit); len(crowds) != 0 {
		for i, c := range crowds[:min(len(crowds), 5)] {
			t.Errorf("crowd %d: %v", i, c)
		}
		t.Fatalf("%d crowds over %d sections", len(crowds), len(sections))
	}
	one := func(string) int { return 1 }
	concurrent := len(check.Crowds(sections, one))
	t.Logf("%d sections, %d of them with another holder of their key", len(sections), concurrent)
	if concurrent == 0 {
		t.Fatal("never two holders at once: the bound of two was not exercised")
	}
}

// permitLoop takes a permit (waiting a little), holds it for a moment,
// and releases it, until stop.
func permitLoop(c *redis.Client, rec *check.Recorder, name string, stop time.Time) {
	ctx := context.Background()
	for n := 0; time.Now().Before(stop); n++ {
		key := fmt.Sprintf("sem:%d", n%2)
		t0 := time.Now()
		res, err := c.Do(ctx, "LOCK", key, 2000, "PERMITS", stressPermits, "WAIT", 100).Slice()
		got := time.Now()
		ok := err == nil && len(res) == 2
		rec.Attempt(t0, got, ok, permitClass(err))
		if !ok {
			continue
		}
		tok, _ := res[0].(string)
		ms, _ := res[1].(int64)
		h := rec.BeginKind(name, key, check.Shared, t0, got, time.Duration(ms)*time.Millisecond)
		time.Sleep(2 * time.Millisecond) // the work done under the permit
		h.End()
		c.Do(ctx, "UNLOCK", key, tok)
	}
}

func permitClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redis.Nil):
		return "contended"
	}
	return "other"
}
