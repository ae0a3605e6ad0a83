package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// queueOrder watches key's fair queue on every backend and keeps, for
// each pair of tokens that every backend queued at once, which one is
// ahead (by ticket): that one must be granted first.
type queueOrder struct {
	mu    sync.Mutex
	ahead map[[2]string]bool // {a, b}: a was queued ahead of b everywhere
}

// watch snapshots the queues until ctx is done.
func (o *queueOrder) watch(ctx context.Context, backends []*redistest.Server, key string) {
	clients := make([]*redis.Client, len(backends))
	for i, s := range backends {
		clients[i] = s.Client()
	}
	for ctx.Err() == nil {
		o.snapshot(ctx, clients, key)
	}
}

func (o *queueOrder) snapshot(ctx context.Context, clients []*redis.Client, key string) {
	seen := map[string]int{}
	var order []string
	for _, c := range clients {
		zs, err := c.ZRangeWithScores(ctx, backend.FairQueueKey(key), 0, -1).Result()
		if err != nil {
			return
		}
		order = order[:0]
		for _, z := range zs {
			m := z.Member.(string)
			seen[m]++
			order = append(order, m)
		}
	}
	// The last backend's order, of the tokens every backend queued.
	everywhere := slices.DeleteFunc(order, func(m string) bool { return seen[m] < len(clients) })
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := 1; i < len(everywhere); i++ {
		o.ahead[[2]string{everywhere[i-1], everywhere[i]}] = true
	}
}

// violations are the pairs granted against their queue order: b granted
// before a although a was queued ahead of it. A token that gave up (not
// in granted) is no violation. checked counts the pairs with both
// granted.
func (o *queueOrder) violations(granted []string) (bad []string, checked int) {
	at := map[string]int{}
	for i, tok := range granted {
		at[tok] = i
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for p := range o.ahead {
		ia, oka := at[p[0]]
		ib, okb := at[p[1]]
		if !oka || !okb {
			continue
		}
		checked++
		if ib < ia {
			bad = append(bad, fmt.Sprintf("%s granted before %s, queued ahead of it", p[1], p[0]))
		}
	}
	return bad, checked
}

// TestQueueOrderChecker: the order check reports a grant that overtook
// the queue, and passes one that kept it.
func TestQueueOrderChecker(t *testing.T) {
	o := &queueOrder{ahead: map[[2]string]bool{{"a", "b"}: true, {"b", "c"}: true}}
	if bad, n := o.violations([]string{"a", "b", "c"}); len(bad) != 0 || n != 2 {
		t.Errorf("queue order kept: %v (%d checked)", bad, n)
	}
	if bad, _ := o.violations([]string{"a", "c", "b"}); len(bad) != 1 {
		t.Errorf("c overtook b: violations %v, want one", bad)
	}
}

// TestFairStress: clients on two proxies, most of them fair and some
// plain waiters, take one key in turns. No two hold it at once (the
// history checker), and every pair of waiters that the backends queued
// in some order was granted in that order.
func TestFairStress(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key, clients = "fair:stress", 6
	rec := check.NewRecorder()
	order := &queueOrder{ahead: map[[2]string]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	var watcher sync.WaitGroup
	watcher.Go(func() { order.watch(ctx, backends, key) })
	var mu sync.Mutex
	var granted []string
	until := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for i := range clients {
		c := waiterClient(t, px[i%2])
		fair := i != 0 // client 0 waits plainly: it joins the queue when it meets one
		wg.Go(func() {
			for n := 0; time.Now().Before(until); n++ {
				tok := fmt.Sprintf("c%d-%d", i, n)
				args := []any{"LOCK", key, 5000, "WAIT", 20000, "TOKEN", tok}
				if fair {
					args = append(args, "FAIR")
				}
				t0 := time.Now()
				res, err := c.Do(context.Background(), args...).Slice()
				got := time.Now()
				rec.Attempt(t0, got, err == nil, fmt.Sprint(err))
				if err != nil {
					continue
				}
				h := rec.Begin(tok, key, t0, got, time.Duration(res[1].(int64))*time.Millisecond)
				mu.Lock()
				granted = append(granted, tok)
				mu.Unlock()
				h.Increment(100 * time.Microsecond)
				h.End()
				c.Do(context.Background(), "UNLOCK", key, tok)
			}
		})
	}
	wg.Wait()
	stop()
	watcher.Wait()
	res := rec.Check()
	t.Log(res)
	if !res.OK() || res.Acquired == 0 {
		t.Errorf("history: %v", res)
	}
	if crowds := check.Crowds(rec.Sections(), nil); len(crowds) != 0 {
		t.Errorf("%d crowds, first: %v", len(crowds), crowds[0])
	}
	bad, checked := order.violations(granted)
	t.Logf("%d grants, %d queued pairs checked", len(granted), checked)
	if checked == 0 {
		t.Error("no two waiters were seen queued together: the order was not checked")
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestCrowdsSeeOverlappingFairHolds: the checker the stress test relies on
// reports two holders of one key at once.
func TestCrowdsSeeOverlappingFairHolds(t *testing.T) {
	rec := check.NewRecorder()
	t0 := time.Now()
	a := rec.Begin("a", "k", t0, t0, time.Minute)
	b := rec.Begin("b", "k", t0, t0.Add(time.Millisecond), time.Minute)
	a.EndAt(t0.Add(3 * time.Millisecond))
	b.EndAt(t0.Add(4 * time.Millisecond))
	if crowds := check.Crowds(rec.Sections(), nil); len(crowds) != 1 {
		t.Fatalf("crowds %v, want one", crowds)
	}
	if res := rec.Check(); res.OK() {
		t.Fatalf("history with two holders at once passed: %v", res)
	}
}
