package faulttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// failover is the lost-write scenario on cluster nodes: A holds key k on
// exactly a majority (clusters 0 and 1: cluster 2 has k held by a foreign
// holder that soon expires), cluster 0's replica for k's shard was kept
// from copying A's write (SIGSTOP, its link cut by CLIENT KILL on the
// master), its master is killed, and the replica
// takes over with CLUSTER FAILOVER TAKEOVER, without k. B then tries k for
// a while. Meanwhile, a load of clients locks keys over every shard.
type failover struct {
	clusters []*redistest.Cluster
	in       *redlocktest.Instance
	c        *redis.Client
	rec      *check.Recorder
	key      string
	shard    int   // k's master (and replica) index in cluster 0
	lastB    error // B's last refusal
}

func startFailover(t *testing.T, quarantine time.Duration) *failover {
	t.Helper()
	f := &failover{key: "lost", rec: check.NewRecorder()}
	f.clusters = []*redistest.Cluster{
		redistest.StartCluster(t, 3, 1), redistest.StartCluster(t, 3, 0), redistest.StartCluster(t, 3, 0),
	}
	f.in = redlocktest.StartOverClusters(t, f.clusters, redlocktest.Options{
		Quorum: func(c *quorum.Config) { c.RestartQuarantine = quarantine },
	})
	f.c = f.in.Client(t, 2)
	f.shard = masterOf(f.clusters[0], slot.Of(f.key))
	return f
}

// lockA takes k for A on clusters 0 and 1 only, with the write kept from
// cluster 0's replica, and returns A's hold.
func (f *failover) lockA(t *testing.T) *check.Hold {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	_, m2 := redlocktest.ClusterValue(t, f.clusters[2], f.key)
	if err := m2.Client().Set(ctx, f.key, "foreign", 1500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	// The replica stops, and its link is cut from the master's side, so
	// that no byte of A's write is on its way to it.
	f.clusters[0].Replicas[f.shard].Stop()
	if err := f.clusters[0].Masters[f.shard].Client().Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := f.c.Do(ctx, "LOCK", f.key, 30000).Slice()
	if err != nil {
		t.Fatalf("A's LOCK: %v", err)
	}
	validity, _ := res[1].(int64)
	h := f.rec.Begin("A", f.key, t0, time.Now(), time.Duration(validity)*time.Millisecond)
	for i, want := range []bool{true, true, false} {
		if v, _ := redlocktest.ClusterValue(t, f.clusters[i], f.key); (v == res[0]) != want {
			t.Fatalf("cluster %d holds %q, A's token %v", i, v, res[0])
		}
	}
	return h
}

// takeOver kills cluster 0's master of k and promotes its replica, which
// never saw A's write, and waits until the proxy routes k's slot to it.
func (f *failover) takeOver(t *testing.T) {
	t.Helper()
	c0 := f.clusters[0]
	master, replica := c0.Masters[f.shard], c0.Replicas[f.shard]
	master.Kill()
	replica.Cont()
	ctx := ctxT(t, 20*time.Second)
	eventually(t, 10*time.Second, "the replica took over", func() bool {
		return replica.Client().Do(ctx, "cluster", "failover", "takeover").Err() == nil
	})
	c0.WaitMaster(t, slot.Of(f.key), replica)
	if v, _ := replica.Client().Get(ctx, f.key).Result(); v != "" {
		t.Fatalf("the new master has %q: the write was not lost", v)
	}
	eventually(t, 10*time.Second, "the proxy routes to the new master", func() bool {
		info, err := f.c.Do(ctx, "INFO", "backends").Text()
		return err == nil && strings.Contains(info, "master="+replica.Addr()+",")
	})
	eventually(t, 5*time.Second, "the foreign holder expired", func() bool {
		v, _ := redlocktest.ClusterValue(t, f.clusters[2], f.key)
		return v == "<nil>"
	})
}

// tryB tries k for B n times; it returns how often B got it.
func (f *failover) tryB(t *testing.T, n int) int {
	t.Helper()
	got := 0
	for range n {
		t0 := time.Now()
		res, err := f.c.Do(ctxT(t, 10*time.Second), "LOCK", f.key, 5000).Slice()
		if err != nil {
			f.lastB = err // null, or NOQUORUM while the shard sits out
			// Spread the tries over a few seconds: a loaded machine may
			// time a node out now and then.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		got++
		validity, _ := res[1].(int64)
		h := f.rec.Begin("B", f.key, t0, time.Now(), time.Duration(validity)*time.Millisecond)
		h.End()
		f.c.Do(ctxT(t, 10*time.Second), "UNLOCK", f.key, res[0])
	}
	return got
}

// A master with a replica dies on one cluster node: after the failover
// that shard of that node sits out every vote (INFO shows it quarantined,
// LOCKINFO shows the veto), so B cannot take A's lock through the empty
// new master; the node's other shards and the other nodes keep granting
// under load; the checker finds no overlap over the whole run.
func TestClusterFailoverQuarantinesTheShard(t *testing.T) {
	f := startFailover(t, quorum.QuarantineAuto)
	ha := f.lockA(t)
	var other string // a key on another shard of cluster 0
	for i := 0; other == ""; i++ {
		if k := fmt.Sprintf("other%d", i); masterOf(f.clusters[0], slot.Of(k)) != f.shard {
			other = k
		}
	}
	keys := []string{other}
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("load%d", i))
	}
	l := clusterLoad{addr: f.in.Addr, clients: 4, keys: keys, ttl: time.Second}
	var gotB int
	res, errs := l.run(t, f.rec, time.Second, func() {
		f.takeOver(t)
		gotB = f.tryB(t, 20)
		ha.End()
	})
	ctx := ctxT(t, 10*time.Second)
	info, err := f.c.Do(ctx, "INFO", "backends").Text()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SCENARIO %s %v; B got the lock %d times\n%s", t.Name(), res, gotB, info)
	replica := f.clusters[0].Replicas[f.shard].Addr()
	if !strings.Contains(info, "master="+replica+",state=quarantined") {
		t.Fatalf("INFO backends does not show the new master's shard quarantined:\n%s", info)
	}
	if strings.Count(info, "state=quarantined") != 1 {
		t.Fatalf("want exactly one shard quarantined:\n%s", info)
	}
	if li := fmt.Sprint(f.c.Do(ctx, "LOCKINFO", f.key).Val()); !strings.Contains(li, "quarantined") {
		t.Fatalf("LOCKINFO %s does not show the shard's veto: %s", f.key, li)
	}
	if li := fmt.Sprint(f.c.Do(ctx, "LOCKINFO", other).Val()); strings.Contains(li, "quarantined") {
		t.Fatalf("LOCKINFO %s shows a veto on a healthy shard: %s", other, li)
	}
	if gotB > 0 {
		t.Fatalf("B took the key %d times while A held it", gotB)
	}
	if len(res.Overlaps) > 0 {
		t.Fatalf("overlaps: %v", res.Overlaps)
	}
	if res.Acquired == 0 || len(errs) > 0 {
		t.Fatalf("the load did not keep granting: %v, errors %v", res, errs)
	}
	if n := grantedAfterFailover(t, f, other); n != len(f.clusters) {
		t.Fatalf("a lock on another shard of the failed-over node after the failover is held on %d of %d clusters, want all: only the failed-over shard sits out", n, len(f.clusters))
	}
}

// grantedAfterFailover locks key (on a healthy shard of cluster 0) and
// counts the clusters holding the token, read on each cluster's master of
// the key: all three, cluster 0 included, when only the failed-over shard
// sits out.
func grantedAfterFailover(t *testing.T, f *failover, key string) int {
	t.Helper()
	res, err := f.c.Do(ctxT(t, 10*time.Second), "LOCK", key, 5000).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if err != nil {
		return 0
	}
	defer f.c.Do(ctxT(t, 10*time.Second), "UNLOCK", key, res[0])
	n := 0
	for _, cl := range f.clusters {
		if v, _ := redlocktest.ClusterValue(t, cl, key); v == res[0] {
			n++
		}
	}
	return n
}

// The negative control: the same failover with the restart quarantine
// off hands A's lock to B, and the checker catches it.
func TestClusterFailoverWithoutQuarantineLosesTheLock(t *testing.T) {
	f := startFailover(t, 0)
	ha := f.lockA(t)
	f.takeOver(t)
	gotB := f.tryB(t, 20)
	ha.End()
	overlaps := check.Overlaps(f.rec.Sections())
	t.Logf("B got the lock %d times (last refusal: %v); overlaps %v", gotB, f.lastB, overlaps)
	if gotB == 0 || len(overlaps) == 0 {
		t.Fatalf("without the quarantine the lost write went unnoticed: B got it %d times, overlaps %v", gotB, overlaps)
	}
}

// A master without a replica that restarts empty (same node id, from its
// nodes.conf; a new run_id) is a restart of its shard too: with a fixed
// quarantine, that shard alone is quarantined for it.
func TestClusterMasterRestartQuarantinesTheShard(t *testing.T) {
	clusters := []*redistest.Cluster{
		redistest.StartCluster(t, 3, 0), redistest.StartCluster(t, 3, 0), redistest.StartCluster(t, 3, 0),
	}
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{
		Quorum: func(c *quorum.Config) { c.RestartQuarantine = time.Minute },
	})
	c := in.Client(t, 2)
	ctx := ctxT(t, 30*time.Second)
	// Every shard's run_id is known before the restart.
	eventually(t, 10*time.Second, "the proxy looked at every master", func() bool {
		info, err := c.Do(ctx, "INFO", "backends").Text()
		return err == nil && upShards(info) == 9
	})
	m := clusters[1].Masters[2]
	m.Restart(t)
	clusters[1].WaitOK(t)
	var info string
	eventually(t, 10*time.Second, "the restarted master's shard quarantined", func() bool {
		var err error
		info, err = c.Do(ctx, "INFO", "backends").Text()
		return err == nil && strings.Contains(info, "master="+m.Addr()+",state=quarantined")
	})
	if n := strings.Count(info, "state=quarantined"); n != 1 {
		t.Fatalf("%d shards quarantined, want 1:\n%s", n, info)
	}
	if !strings.Contains(info, "backend1_shard") || !strings.Contains(info, "quarantine_left_ms=") {
		t.Fatalf("INFO backends:\n%s", info)
	}
}

// upShards counts the shard lines of INFO backends that say up.
func upShards(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.Contains(line, "_shard") && strings.Contains(line, ",state=up,") {
			n++
		}
	}
	return n
}
