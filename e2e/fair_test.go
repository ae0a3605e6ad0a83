package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// fairQueued is the tokens each backend queues for key, in queue order.
func fairQueued(t *testing.T, backends []*redistest.Server, key string) [][]string {
	t.Helper()
	out := make([][]string, len(backends))
	for i, s := range backends {
		v, err := s.Client().ZRange(ctxT(t), backend.FairQueueKey(key), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}

// waitQueued polls until every backend queues exactly want for key.
func waitQueued(t *testing.T, backends []*redistest.Server, key string, want ...string) {
	t.Helper()
	pollFor(t, fmt.Sprintf("queue of %s = %v on every backend", key, want), func() bool {
		for _, q := range fairQueued(t, backends, key) {
			if fmt.Sprint(q) != fmt.Sprint(want) {
				return false
			}
		}
		return true
	})
}

// lockAsync sends LOCK key args… through c and delivers its reply.
func lockAsync(c *redis.Client, key string, args ...any) <-chan lockReply {
	ch := make(chan lockReply, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.Do(ctx, append([]any{"LOCK", key}, args...)...).Slice()
		ch <- lockReply{res, err, time.Now()}
	}()
	return ch
}

// waiterClient is a RESP2 client of in for commands that block: without a
// read timeout (go-redis's default of 3 s would end a long wait by hanging
// up, and a retry would queue the waiter again at the end) nor retries.
func waiterClient(t *testing.T, in *redlocktest.Instance) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// twoProxies serves two redlockd instances over the same three backends.
func twoProxies(t *testing.T, opts redlocktest.Options) ([]*redistest.Server, [2]*redlocktest.Instance) {
	t.Helper()
	backends := redistest.StartN(t, 3)
	return backends, [2]*redlocktest.Instance{
		redlocktest.StartOver(t, backends, opts),
		redlocktest.StartOver(t, backends, opts),
	}
}

// TestFairGrantOrderAcrossProxies: waiters that join the queue one after
// the other, alternating between two proxies, are granted in that order;
// also with one backend down, the queue kept on the other two.
func TestFairGrantOrderAcrossProxies(t *testing.T) {
	t.Run("all backends", func(t *testing.T) { fairOrder(t, "") })
	t.Run("one backend down", func(t *testing.T) { fairOrder(t, "down") })
	t.Run("one backend restarted empty", func(t *testing.T) { fairOrder(t, "restart") })
}

// fairOrder queues waiters one after the other and checks they are
// granted in that order; fault "down" kills a backend first, "restart"
// restarts one (empty: its queue and the holder's copy lost) once every
// waiter is queued.
func fairOrder(t *testing.T, fault string) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key, n = "fair:order", 6
	all := backends
	if fault == "down" {
		backends[2].Kill()
		backends = backends[:2]
	}
	holder := px[0].Client(t, 2)
	htok, _ := lock(t, holder, key, 60000)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	var queued []string
	for i := range n {
		c := waiterClient(t, px[i%2])
		tok := "w" + strconv.Itoa(i)
		wg.Go(func() {
			res, err := c.Do(context.Background(), "LOCK", key, 60000, "WAIT", 60000, "FAIR", "TOKEN", tok).Slice()
			if err != nil || len(res) != 2 {
				t.Errorf("waiter %d: LOCK = %v, %v", i, res, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := c.Do(context.Background(), "UNLOCK", key, tok).Err(); err != nil {
				t.Errorf("waiter %d: UNLOCK: %v", i, err)
			}
		})
		queued = append(queued, tok)
		waitQueued(t, backends, key, queued...)
	}
	if fault == "restart" {
		all[2].Restart(t) // the waiters' next rounds queue them there again
	}
	if n, err := holder.Do(ctxT(t), "UNLOCK", key, htok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4, 5}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("grant order %v, want the arrival order %v", order, want)
	}
	waitQueued(t, backends, key)
}

// queueEntry writes a waiter's entry for key on every backend, as a
// waiter's round does, expiring after ttl, and never refreshes it: a
// waiter whose proxy died.
func queueEntry(t *testing.T, backends []*redistest.Server, key, token string, ticket int64, ttl time.Duration) {
	t.Helper()
	for _, s := range backends {
		c := s.Client()
		tm, err := c.Time(ctxT(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		q, e := backend.FairQueueKey(key), "redlockd:fairttl:{"+key+"}"
		exp := float64(tm.Add(ttl).UnixMilli())
		if err := c.ZAdd(ctxT(t), q, redis.Z{Score: float64(ticket), Member: token}).Err(); err != nil {
			t.Fatal(err)
		}
		c.ZAdd(ctxT(t), e, redis.Z{Score: exp, Member: token})
		c.PExpire(ctxT(t), q, ttl)
		c.PExpire(ctxT(t), e, ttl)
	}
}

// TestFairDeadWaiterExpires: a queued waiter that stops refreshing its
// entry (its proxy died) leaves the queue by itself once the entry
// expires, and the waiter behind it gets the lock.
func TestFairDeadWaiterExpires(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key = "fair:dead"
	queueEntry(t, backends, key, "dead", 1, 5*time.Second)
	res := lockAsync(waiterClient(t, px[1]), key, 60000, "WAIT", 30000, "FAIR", "TOKEN", "next")
	waitQueued(t, backends, key, "dead", "next")
	var r lockReply
	select {
	case r = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter behind a dead one was never served")
	}
	if r.err != nil || len(r.res) != 2 || r.res[0] != "next" {
		t.Fatalf("LOCK = %v, %v; want the lock", r.res, r.err)
	}
	waitQueued(t, backends, key)
}

// reservedOnAll reports whether every backend holds key reserved for
// its fair queue: present, with the value its reservation key holds.
func reservedOnAll(t *testing.T, backends []*redistest.Server, key string) bool {
	t.Helper()
	for _, s := range backends {
		v, err := s.Client().Get(ctxT(t), key).Result()
		r, rerr := s.Client().Get(ctxT(t), "redlockd:fairres:{"+key+"}").Result()
		if err != nil || rerr != nil || v != r || !strings.HasPrefix(v, "redlockd:queued:") {
			return false
		}
	}
	return true
}

// TestFairPlainDoesNotOvertake: the holder's UNLOCK leaves the key
// reserved for the waiter queued for it (whose proxy has not come round to
// take it yet): a plain try-lock, a FAIR try-lock and SET NX get null, and
// a plain LOCK … WAIT joins the queue behind it and is served once the
// queue ahead of it is gone.
func TestFairPlainDoesNotOvertake(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key = "fair:plain"
	c := px[0].Client(t, 2)
	htok, _ := lock(t, c, key, 60000)
	queueEntry(t, backends, key, "first", 1, time.Minute)
	if n, err := c.Do(ctxT(t), "UNLOCK", key, htok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	if !reservedOnAll(t, backends, key) {
		t.Error("the released key is not reserved for the waiter queued")
	}
	for _, args := range [][]any{
		{"LOCK", key, 10000},
		{"LOCK", key, 10000, "FAIR"},
		{"SET", key, "v", "NX", "PX", 10000},
		{"SET", key, "v", "NX"},
	} {
		if v, err := c.Do(ctxT(t), args...).Result(); err != redis.Nil {
			t.Errorf("%v with a waiter queued = %v, %v; want null", args, v, err)
		}
	}
	res := lockAsync(waiterClient(t, px[1]), key, 60000, "WAIT", 30000, "TOKEN", "plain")
	waitQueued(t, backends, key, "first", "plain")
	select {
	case r := <-res:
		t.Fatalf("plain waiter overtook the queue: %v, %v", r.res, r.err)
	default:
	}
	for _, s := range backends {
		s.Client().ZRem(ctxT(t), backend.FairQueueKey(key), "first")
	}
	r := <-res
	if r.err != nil || len(r.res) != 2 || r.res[0] != "plain" {
		t.Fatalf("plain LOCK WAIT = %v, %v; want the lock once the queue ahead left", r.res, r.err)
	}
	waitQueued(t, backends, key)
}

// TestFairKilledProxyWaiter: a proxy process killed while its client waits
// in the queue refreshes its entry no more; once it expires, the waiter
// behind it (on another proxy) is served.
func TestFairKilledProxyWaiter(t *testing.T) {
	bin := redlocktest.Build(t, "./cmd/redlockd")
	backends, px := twoProxies(t, redlocktest.Options{})
	const key = "fair:killed"
	holder := px[0].Client(t, 2)
	htok, _ := lock(t, holder, key, 60000)
	p := redlocktest.StartProcess(t, bin, backends)
	doomed := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { doomed.Close() })
	dead := lockAsync(doomed, key, 60000, "WAIT", 60000, "FAIR", "TOKEN", "doomed")
	waitQueued(t, backends, key, "doomed")
	next := lockAsync(waiterClient(t, px[1]), key, 60000, "WAIT", 60000, "FAIR", "TOKEN", "next")
	waitQueued(t, backends, key, "doomed", "next")
	p.Signal(t, syscall.SIGKILL)
	if r := <-dead; r.err == nil {
		t.Fatalf("the killed proxy's client got %v", r.res)
	}
	if err := holder.Do(ctxT(t), "UNLOCK", key, htok).Err(); err != nil {
		t.Fatal(err)
	}
	r := <-next
	if r.err != nil || len(r.res) != 2 || r.res[0] != "next" {
		t.Fatalf("LOCK = %v, %v; want the lock once the dead waiter's entry expired", r.res, r.err)
	}
	waitQueued(t, backends, key)
}

// TestFairHangUpLeavesQueue: a queued waiter whose client hangs up leaves
// the queue on every backend at once (its entry would otherwise live for
// seconds), and the waiter behind it, on the other proxy, is woken by the
// pipelined UNLOCK of the holder's fair lock and served.
func TestFairHangUpLeavesQueue(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{Quorum: slowRetries})
	const key = "fair:hangup"
	holder := px[0].Client(t, 2)
	htok, _ := lock(t, holder, key, 60000, "WAIT", 1000, "FAIR")
	gone, err := net.Dial("tcp", px[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(gone, "LOCK %s 60000 WAIT 60000 FAIR TOKEN gone\r\n", key)
	waitQueued(t, backends, key, "gone")
	next := lockAsync(waiterClient(t, px[1]), key, 60000, "WAIT", 60000, "FAIR", "TOKEN", "next")
	waitQueued(t, backends, key, "gone", "next")
	gone.Close()
	waitQueued(t, backends, key, "next")
	pipe := holder.Pipeline()
	pipe.Do(ctxT(t), "PING")
	unlock := pipe.Do(ctxT(t), "UNLOCK", key, htok)
	if _, err := pipe.Exec(ctxT(t)); err != nil || unlock.Val() != int64(1) {
		t.Fatalf("pipelined UNLOCK = %v, %v", unlock.Val(), err)
	}
	released := time.Now()
	r := <-next
	if r.err != nil || len(r.res) != 2 || r.res[0] != "next" {
		t.Fatalf("LOCK = %v, %v; want the lock", r.res, r.err)
	}
	if d := r.at.Sub(released); d > wakeBound {
		t.Errorf("the next waiter got the lock %v after the release; its retry jitter is %v, so it was not woken", d, slowJitter)
	}
	waitQueued(t, backends, key)
}

// TestFairWakeHandedOn: a release wakes a proxy's oldest waiter of the
// key; when that is a plain waiter that meets the queue (and joins it at
// its end), it hands the wake on, and the fair waiter behind it on the
// same proxy, first in the queue, is served at once rather than at its
// next retry.
func TestFairWakeHandedOn(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{Quorum: slowRetries})
	const key = "fair:handon"
	holder := px[1].Client(t, 2)
	htok, _ := lock(t, holder, key, 60000)
	plain := lockAsync(waiterClient(t, px[0]), key, 60000, "WAIT", 60000, "TOKEN", "plain")
	pollFor(t, "the plain waiter's marked round on every backend", func() bool {
		for _, s := range backends {
			if s.Client().Exists(ctxT(t), "redlockd:wait:{"+key+"}").Val() != 1 {
				return false
			}
		}
		return px[0].Cluster.Waiters(key) == 1
	})
	fair := lockAsync(waiterClient(t, px[0]), key, 60000, "WAIT", 60000, "FAIR", "TOKEN", "fair")
	waitQueued(t, backends, key, "fair")
	if err := holder.Do(ctxT(t), "UNLOCK", key, htok).Err(); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	r := <-fair
	if r.err != nil || len(r.res) != 2 || r.res[0] != "fair" {
		t.Fatalf("fair waiter: %v, %v", r.res, r.err)
	}
	if d := r.at.Sub(released); d > wakeBound {
		t.Errorf("the fair waiter got the lock %v after the release; its retry jitter is %v, so the wake was not handed on", d, slowJitter)
	}
	waitQueued(t, backends, key, "plain")
	if err := px[0].Client(t, 2).Do(ctxT(t), "UNLOCK", key, "fair").Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-plain; r.err != nil || len(r.res) != 2 || r.res[0] != "plain" {
		t.Fatalf("plain waiter: %v, %v", r.res, r.err)
	}
}
