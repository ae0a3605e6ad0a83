package faulttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// clusterLoad is a contention workload through a proxy: clients loop
// LOCK → increment → UNLOCK on keys, and every error reply is counted.
type clusterLoad struct {
	addr    string
	clients int
	keys    []string
	ttl     time.Duration
}

// run runs the load until during returns (at least for min), and returns
// the history's verdict and the error replies the clients got.
// The sections go to rec.
func (l clusterLoad) run(t *testing.T, rec *check.Recorder, min time.Duration, during func()) (check.Result, []error) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: l.addr, Protocol: 2, MaxRetries: -1})
			defer c.Close()
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.once(c, rec, fmt.Sprintf("c%d", i), l.keys[n%len(l.keys)]); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	timer := time.NewTimer(min)
	during()
	<-timer.C
	close(stop)
	wg.Wait()
	return rec.Check(), errs
}

// once takes key, holds it a moment and releases it; an error reply is
// returned (contention is a null, not an error).
func (l clusterLoad) once(c *redis.Client, rec *check.Recorder, name, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := c.Do(ctx, "LOCK", key, l.ttl.Milliseconds()).Slice()
	got := time.Now()
	rec.Attempt(t0, got, err == nil, "")
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("LOCK %s: %w", key, err)
	}
	tok, _ := res[0].(string)
	validity, _ := res[1].(int64)
	h := rec.Begin(name, key, t0, got, time.Duration(validity)*time.Millisecond)
	h.Increment(100 * time.Microsecond)
	h.End()
	if err := c.Do(ctx, "UNLOCK", key, tok).Err(); err != nil {
		return fmt.Errorf("UNLOCK %s: %w", key, err)
	}
	return nil
}

// masterOf is the master of c that serves slot s as StartCluster assigns
// slots.
func masterOf(c *redistest.Cluster, s int) int { return s * len(c.Masters) / slot.Count }

// A slot moves between masters on every cluster at once, back and forth,
// while clients lock keys in it: the proxy follows ASK and MOVED (and
// waits out TRYAGAIN) within the node timeout, so no error reaches a
// client, and the checker finds no lock held twice.
func TestClusterSlotMigrationUnderLoad(t *testing.T) {
	clusters := make([]*redistest.Cluster, 3)
	for i := range clusters {
		clusters[i] = redistest.StartCluster(t, 3, 0)
	}
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	const tag = "mig"
	s := slot.Of(tag)
	var keys []string
	for i := range 4 {
		keys = append(keys, fmt.Sprintf("{%s}:%d", tag, i), fmt.Sprintf("%s%d", tag, i))
	}
	l := clusterLoad{addr: in.Addr, clients: 6, keys: keys, ttl: 2 * time.Second}
	res, errs := l.run(t, check.NewRecorder(), time.Second, func() {
		from := masterOf(clusters[0], s)
		to := (from + 1) % 3
		for range 4 {
			migrateEverywhere(t, clusters, s, from, to)
			from, to = to, from
		}
	})
	t.Logf("SCENARIO %s %v", t.Name(), res)
	for i, err := range errs {
		if i == 5 {
			break
		}
		t.Errorf("a client got an error reply: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("%d error replies reached clients during the migrations", len(errs))
	}
	if !res.OK() {
		t.Fatalf("mutual exclusion violated: %v (%v)", res, res.Overlaps)
	}
	if res.Acquired == 0 {
		t.Fatal("no lock was acquired")
	}
}

// migrateEverywhere moves slot s from master from to master to on every
// cluster, each step on all of them before the next.
func migrateEverywhere(t *testing.T, clusters []*redistest.Cluster, s, from, to int) {
	t.Helper()
	for _, c := range clusters {
		c.BeginMigration(t, s, c.Masters[from], c.Masters[to])
	}
	for _, c := range clusters {
		c.MoveKeys(t, s, c.Masters[from], c.Masters[to])
	}
	for _, c := range clusters {
		c.EndMigration(t, s, c.Masters[from], c.Masters[to])
	}
	for _, c := range clusters {
		c.WaitMaster(t, s, c.Masters[to])
	}
}
