package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// startClusters starts n Redis Clusters of 3 masters each, with replicas
// replicas per master.
func startClusters(t *testing.T, n, replicas int) []*redistest.Cluster {
	t.Helper()
	out := make([]*redistest.Cluster, n)
	for i := range out {
		out[i] = redistest.StartCluster(t, 3, replicas)
	}
	return out
}

// A lock over three cluster nodes is held, on a majority of them, by the
// master of each cluster that serves its key's slot; keys spread over
// every shard of every cluster; UNLOCK takes every copy back.
func TestClusterLocksLiveOnTheirSlotsMaster(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	tokens := map[string]string{}
	used := map[*redistest.Server]int{}
	for i := range 60 {
		key := fmt.Sprintf("res:%d", i)
		tok, validity := lock(t, c, key, 10000)
		if validity <= 0 {
			t.Fatalf("LOCK %s validity %d", key, validity)
		}
		tokens[key] = tok
		held := 0
		for _, cl := range clusters {
			v, m := redlocktest.ClusterValue(t, cl, key)
			if v == tok {
				held++
				used[m]++
			}
		}
		if held < 2 {
			t.Fatalf("%s held on %d of 3 clusters, want a majority", key, held)
		}
	}
	for _, cl := range clusters {
		for _, m := range cl.Masters {
			if used[m] == 0 {
				t.Fatalf("no lock landed on master %s: keys did not spread over every shard", m.Addr())
			}
		}
	}
	for key, tok := range tokens {
		if n, err := c.Do(ctx, "UNLOCK", key, tok).Int(); err != nil || n != 1 {
			t.Fatalf("UNLOCK %s: %d, %v", key, n, err)
		}
		for _, cl := range clusters {
			if v, _ := redlocktest.ClusterValue(t, cl, key); v != "<nil>" {
				t.Fatalf("%s still %q on a cluster after UNLOCK", key, v)
			}
		}
	}
}

// Every cluster node shows its shards in INFO backends.
func TestClusterShardsInInfo(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	c := in.Client(t, 2)
	showsAll := func(info string) bool {
		for _, cl := range clusters {
			for _, m := range cl.Masters {
				if !strings.Contains(info, "master="+m.Addr()+",state=up") {
					return false
				}
			}
		}
		return true
	}
	info := pollInfo(t, c, showsAll)
	if strings.Count(info, "_shard") != 9 {
		t.Fatalf("INFO backends shows %d shard lines, want 9:\n%s", strings.Count(info, "_shard"), info)
	}
}

// pollInfo reads INFO backends until ok holds of it (bounded).
func pollInfo(t *testing.T, c doer, ok func(string) bool) string {
	t.Helper()
	var info string
	for range 200 {
		var err error
		if info, err = c.Do(ctxT(t), "INFO", "backends").Text(); err != nil {
			t.Fatal(err)
		}
		if ok(info) {
			return info
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("INFO backends never as expected:\n%s", info)
	return ""
}

// The lock options over cluster nodes, through two proxies, on keys with
// and without a hash tag of their own (the keys the proxy keeps for a
// lock key share its slot either way): OWNER reentry across proxies,
// FENCE monotonic across proxies, WAIT woken by a release through the
// other proxy, KEEPALIVE held past its ttl, a session lock (SET NX), and
// a pipelined batch. SELECT of another db fails: a cluster has db 0 only.
func TestClusterLockOptionsAcrossTwoProxies(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	// Slow retries: a waiter that gets the lock soon after the release
	// was woken by it (clusterWaitWoken).
	a := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{Quorum: slowRetries})
	b := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{Quorum: slowRetries})
	ca, cb := a.Client(t, 0), b.Client(t, 2)
	ctx := ctxT(t)
	for _, key := range []string{"opt", "{user:7}:opt"} {
		// OWNER: reentrant through either proxy, one token, two holds.
		tok, _ := lock(t, ca, key, 10000, "OWNER", "w1")
		tok2, _ := lock(t, cb, key, 10000, "OWNER", "w1")
		if tok2 != tok {
			t.Fatalf("%s: OWNER reentry through the other proxy got %q, want %q", key, tok2, tok)
		}
		if err := cb.Do(ctx, "LOCK", key, 10000, "OWNER", "w2").Err(); err != redis.Nil {
			t.Fatalf("%s: another owner: %v, want null", key, err)
		}
		for range 2 {
			if n, err := ca.Do(ctx, "UNLOCK", key, tok).Int(); err != nil || n != 1 {
				t.Fatalf("%s: UNLOCK of a hold: %d, %v", key, n, err)
			}
		}
		if v := a.BackendValues(t, key); redlocktest.Count(v, "<nil>") != 3 {
			t.Fatalf("%s: still held after both holds dropped: %v", key, v)
		}
		// FENCE: strictly increasing through both proxies.
		var last int64
		for i, c := range []doer{ca, cb, ca} {
			res, err := c.Do(ctx, "LOCK", key, 5000, "FENCE").Slice()
			if err != nil || len(res) != 3 {
				t.Fatalf("%s: LOCK FENCE: %v, %v", key, res, err)
			}
			f, _ := res[2].(int64)
			if f <= last {
				t.Fatalf("%s: fence %d after %d (step %d)", key, f, last, i)
			}
			last = f
			c.Do(ctx, "UNLOCK", key, res[0])
		}
		clusterWaitWoken(t, ca, b.Addr, key)
	}
	clusterKeepAndSession(t, a, ctx)
	db1 := redis.NewClient(&redis.Options{Addr: a.Addr, DB: 1, Protocol: 2})
	defer db1.Close()
	if err := db1.Do(ctx, "LOCK", "db1", 5000).Err(); err == nil || !strings.Contains(err.Error(), "database 0 only") {
		t.Fatalf("LOCK in db 1 over cluster nodes: %v, want an error saying a cluster has db 0 only", err)
	}
}

// clusterWaitWoken: a WAIT through one proxy (the one at bAddr) is
// woken by an UNLOCK through the other. The proxies retry every
// slowJitter, so a waiter that gets the lock within wakeBound of the
// UNLOCK, which comes once it is in its pause, was woken by it.
func clusterWaitWoken(t *testing.T, ca doer, bAddr, key string) {
	t.Helper()
	ctx := ctxT(t)
	tok, _ := lock(t, ca, key, 30000)
	info := redis.NewClient(&redis.Options{Addr: bAddr, Protocol: 2, DisableIdentity: true})
	defer info.Close()
	before := contendedRounds(t, info)
	got := make(chan error, 1)
	w := blockingClient(t, redis.NewClient(&redis.Options{Addr: bAddr, Protocol: 2}))
	go func() { got <- w.Do(ctx, "LOCK", key, 5000, "WAIT", 2*slowJitter.Milliseconds()).Err() }()
	pollFor(t, key+": the waiter's first two rounds", func() bool { return contendedRounds(t, info) >= before+2 })
	start := time.Now()
	if n, err := ca.Do(ctx, "UNLOCK", key, tok).Int(); err != nil || n != 1 {
		t.Fatalf("%s: UNLOCK: %d, %v", key, n, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("%s: the waiter: %v", key, err)
	}
	if waited := time.Since(start); waited > wakeBound {
		t.Fatalf("%s: the waiter got the lock %v after the UNLOCK; its retry pause is %v, so the UNLOCK did not wake it", key, waited, slowJitter)
	}
}

// clusterKeepAndSession: a KEEPALIVE lock outlives its ttl while its
// connection lives, and a session lock (SET NX without expiry) is held
// with the session ttl and answers PTTL -1; a pipeline of SET NX PX over
// many keys is granted in one batch.
func clusterKeepAndSession(t *testing.T, in *redlocktest.Instance, ctx context.Context) {
	t.Helper()
	c := in.Client(t, 2)
	tok, _ := lock(t, c, "keep", 600, "KEEPALIVE")
	time.Sleep(1500 * time.Millisecond) // past the ttl: only renewals keep it
	if got, err := c.Get(ctx, "keep").Result(); err != nil || got != tok {
		t.Fatalf("KEEPALIVE lock after its ttl: %q, %v; want %q", got, err, tok)
	}
	if ok, err := c.SetNX(ctx, "session", "s1", 0).Result(); err != nil || !ok {
		t.Fatalf("session lock: %v, %v", ok, err)
	}
	if d, err := c.PTTL(ctx, "session").Result(); err != nil || d != -1*time.Nanosecond && d != -1*time.Millisecond {
		t.Fatalf("PTTL of a session lock: %v, %v; want -1", d, err)
	}
	p := c.Pipeline()
	var cmds []*redis.BoolCmd
	for i := range 50 {
		cmds = append(cmds, p.SetNX(ctx, fmt.Sprintf("pipe:%d", i), "t", 5*time.Second))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	for i, cmd := range cmds {
		if !cmd.Val() {
			t.Fatalf("pipelined SET NX %d not granted", i)
		}
	}
}

// The lock kinds keep their companion keys (readers, writer's mark, permit
// slots, fair queues) in the lock key's slot, so SHARED, PERMITS and FAIR
// work over cluster nodes, for a key with braces of its own as for any.
func TestClusterLockKindsAcrossTwoProxies(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	a := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	b := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	ca, cb := a.Client(t, 0), b.Client(t, 2)
	ctx := ctxT(t)
	for _, key := range []string{"kinds", "{user:7}:kinds"} {
		// SHARED: two readers through two proxies; a writer is refused,
		// and gets the key once both readers are gone.
		r1, _ := lock(t, ca, key, 10000, "SHARED")
		r2, _ := lock(t, cb, key, 10000, "SHARED")
		if err := ca.Do(ctx, "LOCK", key, 10000).Err(); err != redis.Nil {
			t.Fatalf("%s: writer among readers: %v, want null", key, err)
		}
		if v, err := cb.Do(ctx, "RENEW", key, r1, 10000).Int64(); err != nil || v <= 0 {
			t.Fatalf("%s: RENEW of a reader through the other proxy: %d, %v", key, v, err)
		}
		for _, r := range []string{r1, r2} {
			if n, err := cb.Do(ctx, "UNLOCK", key, r).Int(); err != nil || n != 1 {
				t.Fatalf("%s: UNLOCK reader: %d, %v", key, n, err)
			}
		}
		w, _ := lock(t, ca, key, 10000)
		if n, err := ca.Do(ctx, "UNLOCK", key, w).Int(); err != nil || n != 1 {
			t.Fatalf("%s: UNLOCK writer: %d, %v", key, n, err)
		}
		// PERMITS: two of two through two proxies, the third refused, a
		// released permit taken again.
		p1, _ := lock(t, ca, key, 10000, "PERMITS", 2)
		lock(t, cb, key, 10000, "PERMITS", 2)
		if err := ca.Do(ctx, "LOCK", key, 10000, "PERMITS", 2).Err(); err != redis.Nil {
			t.Fatalf("%s: third of two permits: %v, want null", key, err)
		}
		if n, err := cb.Do(ctx, "UNLOCK", key, p1).Int(); err != nil || n != 1 {
			t.Fatalf("%s: UNLOCK permit: %d, %v", key, n, err)
		}
		lock(t, cb, key, 10000, "PERMITS", 2)
		if _, err := ca.Do(ctx, "DEL", key).Result(); err != nil {
			t.Fatalf("%s: DEL: %v", key, err)
		}
	}
	// FAIR: a holder on A, a fair waiter on B; the holder's release
	// through A hands the key to B's waiter.
	key := "{user:8}:fair"
	h, _ := lock(t, ca, key, 10000)
	got := make(chan error, 1)
	go func() { got <- cb.Do(ctx, "LOCK", key, 10000, "WAIT", 20000, "FAIR").Err() }()
	waitQueuedOnClusters(t, clusters, key)
	if err := ca.Do(ctx, "LOCK", key, 10000).Err(); err != redis.Nil {
		t.Fatalf("plain LOCK past a fair waiter: %v, want null", err)
	}
	if n, err := ca.Do(ctx, "UNLOCK", key, h).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK: %d, %v", n, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("fair waiter: %v", err)
	}
}

// waitQueuedOnClusters polls (bounded) until key's fair queue (a sorted set, which
// GET answers with WRONGTYPE) exists on a majority of the clusters, in the
// master of its slot: the waiter is queued, and a plain try-lock must not
// overtake it.
func waitQueuedOnClusters(t *testing.T, clusters []*redistest.Cluster, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		queued := 0
		for _, cl := range clusters {
			if v, _ := redlocktest.ClusterValue(t, cl, backend.FairQueueKey(key)); strings.Contains(v, "WRONGTYPE") {
				queued++
			}
		}
		if queued >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fair waiter queued on %d of 3 clusters after 10s", key, queued)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
