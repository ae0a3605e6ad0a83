package backend

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestRedisUncontendedReleasePublishesNothing: a lock nobody waited for is
// released without a word on any backend's release channel.
func TestRedisUncontendedReleasePublishesNothing(t *testing.T) {
	servers := redistest.StartN(t, 3)
	c := proxyOver(t, servers, nil)
	subs := subscribeAll(t, servers)
	if _, err := c.Acquire(t.Context(), wakeKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Release(t.Context(), wakeKey, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	for i, ps := range subs {
		if keys := published(t, ps, "uncontended"); len(keys) != 0 {
			t.Errorf("%s published %q for an uncontended release", servers[i].Addr(), keys)
		}
		if marked(t, servers[i], wakeKey) {
			t.Errorf("%s: an uncontended acquire left a wait mark", servers[i].Addr())
		}
	}
}

// TestRedisMarkedReleasePublishes: a waiter on another proxy marks the key
// on every backend, so the holder's release is published by each and the
// waiter wakes long before its jitter.
func TestRedisMarkedReleasePublishes(t *testing.T) {
	servers := redistest.StartN(t, 3)
	holder := proxyOver(t, servers, nil)
	waiters := proxyOver(t, servers, nil)
	waitSubscribed(t, servers, 2)
	subs := subscribeAll(t, servers)
	if _, err := holder.Acquire(t.Context(), wakeKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	res := waitBehindHolder(t, waiters, servers, 3*slowJitter)
	released := time.Now()
	if ok, err := holder.Release(t.Context(), wakeKey, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	for i, ps := range subs {
		if keys := published(t, ps, "marked"); !slices.Equal(keys, []string{wakeKey}) {
			t.Errorf("%s published %q, want the key once", servers[i].Addr(), keys)
		}
	}
	o := await(t, res)
	if o.err != nil || o.l.Token != "waiter" {
		t.Fatalf("waiter got %+v, %v", o.l, o.err)
	}
	if d := o.at.Sub(released); d > wakeBound {
		t.Errorf("waiter acquired %v after the release, want a wake-up", d)
	}
}

// releaseAfterFirstRound is an Observer that runs release once, right
// after the first acquire round that was refused: on the waiter's
// goroutine, before AcquireWait can mark the key.
type releaseAfterFirstRound struct {
	once    sync.Once
	release func()
}

func (*releaseAfterFirstRound) NodesDone(string, []quorum.NodeResult) {}

func (o *releaseAfterFirstRound) OpDone(op, outcome string, _, _, _ time.Duration) {
	if op == quorum.OpAcquire && outcome == quorum.OutcomeContended {
		o.once.Do(o.release)
	}
}

// TestRedisReleaseBeforeMarkStillAcquires is the race of marking after a
// failed round: the holder releases (publishing nothing, as nobody marked
// the key yet) between the waiter's first round and its mark. The waiter
// must still acquire at once; with an hour's jitter only its immediate
// marked round can explain that.
func TestRedisReleaseBeforeMarkStillAcquires(t *testing.T) {
	servers := redistest.StartN(t, 3)
	holder := proxyOver(t, servers, nil)
	subs := subscribeAll(t, servers)
	if _, err := holder.Acquire(t.Context(), wakeKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	released := make(chan time.Time, 1)
	obs := &releaseAfterFirstRound{release: func() {
		if ok, err := holder.Release(context.Background(), wakeKey, "holder"); !ok || err != nil {
			t.Errorf("Release = %v, %v", ok, err)
		}
		released <- time.Now()
	}}
	waiters := proxyOver(t, servers, func(c *quorum.Config) {
		c.RetryDelayMin, c.RetryDelayMax = time.Hour, time.Hour
		c.Observer = obs
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*wakeBound) // so that a missed release fails, not hangs
	defer cancel()
	start := time.Now()
	l, err := waiters.Acquire(ctx, wakeKey, "waiter", time.Minute, quorum.Wait(2*time.Hour))
	if err != nil || l.Token != "waiter" {
		t.Fatalf("waiter got %+v, %v", l, err)
	}
	select {
	case <-released:
	default:
		t.Fatal("the holder's release did not run between the waiter's rounds")
	}
	if d := time.Since(start); d > wakeBound {
		t.Errorf("waiter took %v, far from at once", d)
	}
	for i, ps := range subs {
		if keys := published(t, ps, "unmarked release"); len(keys) != 0 {
			t.Errorf("%s published %q before the waiter marked the key", servers[i].Addr(), keys)
		}
	}
}

func subscribeAll(t *testing.T, servers []*redistest.Server) []*redis.PubSub {
	t.Helper()
	subs := make([]*redis.PubSub, len(servers))
	for i, s := range servers {
		subs[i] = subscribeReleases(t, s)
	}
	return subs
}
