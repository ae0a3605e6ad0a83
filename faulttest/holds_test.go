package faulttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestOwnerKeepaliveRace: clients in three owner groups, on two proxies,
// take holds of one key with LOCK … OWNER <group>, half of them with
// KEEPALIVE, and end them by UNLOCK or by hanging up. Holds of one group
// may overlap (that is reentry); holds of two groups never may. A kept
// hold's claim lasts until its client ends it; any other hold's until its
// reported validity.
func TestOwnerKeepaliveRace(t *testing.T) {
	p1 := redlocktest.Start(t, redlocktest.Options{NodeTimeout: 200 * time.Millisecond})
	p2 := redlocktest.StartOver(t, p1.Backends, redlocktest.Options{NodeTimeout: 200 * time.Millisecond})
	proxies := []*redlocktest.Instance{p1, p2}
	rec := check.NewRecorder()
	stop := time.Now().Add(runFor() + 6*time.Second)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holdLoop(proxies[i%2].Addr, rec, fmt.Sprintf("g%d", i%3), uint64(i), stop)
		}()
	}
	wg.Wait()
	lost := p1.Handler.KeepaliveStats().Lost + p2.Handler.KeepaliveStats().Lost
	res := rec.Check()
	overlaps := check.Overlaps(mergeByClient(rec.Sections()))
	t.Logf("lost=%d %v (overlaps within a group are reentries) between owners=%d", lost, res, len(overlaps))
	for _, o := range overlaps {
		t.Errorf("two owners at once: %v", o)
	}
	if lost > 0 {
		t.Fatalf("%d kept lock(s) lost without any fault: their claims are void", lost)
	}
	if res.Acquired == 0 {
		t.Fatal("no hold was ever granted")
	}
}

// holdLoop takes holds for owner group until stop, each over a connection
// of its own so that it can hang up.
func holdLoop(addr string, rec *check.Recorder, group string, seed uint64, stop time.Time) {
	ctx := context.Background()
	const ttl = time.Second
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	for time.Now().Before(stop) {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, MaxIdleConns: 1,
			DisableIdentity: true, ReadTimeout: 5 * time.Second})
		kept := rng.IntN(2) == 0
		args := []any{"LOCK", "k", ttl.Milliseconds(), "OWNER", group}
		if kept {
			args = append(args, "KEEPALIVE")
		}
		t0 := time.Now()
		res, err := c.Do(ctx, args...).Slice()
		got := time.Now()
		granted := err == nil
		if errors.Is(err, redis.Nil) {
			err = nil // another owner holds it
		}
		rec.Attempt(t0, got, granted, errClassRESP(err, granted))
		if !granted {
			c.Close()
			time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Millisecond)))) // pacing
			continue
		}
		tok, _ := res[0].(string)
		ms, _ := res[1].(int64)
		validity := time.Duration(ms) * time.Millisecond
		if kept {
			validity = time.Hour // the proxy keeps it while the connection lives
		}
		h := rec.Begin(group, "k", t0, got, validity)
		time.Sleep(time.Duration(rng.Int64N(int64(3 * ttl / 2)))) // the work, past the ttl at times
		h.End()
		if !kept || rng.IntN(2) == 0 {
			c.Do(ctx, "UNLOCK", "k", tok)
		}
		c.Close() // for a kept hold not unlocked: hanging up drops it
	}
}

// mergeByClient joins the overlapping sections of one client (here: one
// owner group) on one key into one, so that only overlaps between
// different owners remain.
func mergeByClient(ss []check.Section) []check.Section {
	slices.SortFunc(ss, func(a, b check.Section) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Client, b.Client), a.Start.Compare(b.Start))
	})
	var out []check.Section
	for _, s := range ss {
		if n := len(out); n > 0 && out[n-1].Key == s.Key && out[n-1].Client == s.Client && !s.Start.After(out[n-1].End) {
			if s.End.After(out[n-1].End) {
				out[n-1].End = s.End
			}
			continue
		}
		out = append(out, s)
	}
	return out
}
