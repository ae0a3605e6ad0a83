package faulttest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestClusterOneSeedFollowsFailover: three clusters of one master and one
// replica, each given to two proxies by its master alone
// (cluster://master, no further seed). Cluster 0's replica is stopped and
// cut off, X locks, the master is killed and the replica takes over. Both
// proxies find the new master through the replica their earlier topology
// reads named (every server named is a seed), and once its shard's
// quarantine has ended, lock through it while cluster 2 is stopped (the
// lock needs cluster 0's vote).
func TestClusterOneSeedFollowsFailover(t *testing.T) {
	clusters := make([]*redistest.Cluster, 3)
	urls := make([]string, 3)
	for i := range clusters {
		clusters[i] = redistest.StartCluster(t, 1, 1)
		urls[i] = "cluster://" + clusters[i].Masters[0].Addr()
	}
	opts := redlocktest.Options{Quorum: func(c *quorum.Config) { c.RestartQuarantine = quorum.QuarantineAuto }}
	proxies := []*redlocktest.Instance{
		redlocktest.StartOverClusterURLs(t, clusters, urls, opts),
		redlocktest.StartOverClusterURLs(t, clusters, urls, opts),
	}
	clients := make([]*redis.Client, len(proxies))
	for i, p := range proxies {
		clients[i] = p.Client(t, 2)
	}
	ctx := ctxT(t, time.Minute)
	master, replica := clusters[0].Masters[0], clusters[0].Replicas[0]
	for _, c := range clients {
		eventually(t, 10*time.Second, "the proxy sees every shard", func() bool {
			info, err := c.Do(ctx, "INFO", "backends").Text()
			return err == nil && strings.Count(info, ",state=up") >= 3
		})
	}
	replica.Stop()
	if err := master.Client().Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	if err := clients[0].Do(ctx, "LOCK", "x", 2000).Err(); err != nil {
		t.Fatalf("X's LOCK: %v", err)
	}
	master.Kill()
	replica.Cont()
	eventually(t, 10*time.Second, "the replica took over", func() bool {
		return replica.Client().Do(ctx, "cluster", "failover", "takeover").Err() == nil
	})
	clusters[0].WaitMaster(t, slot.Of("y"), replica)
	for i, c := range clients {
		eventually(t, 15*time.Second, "proxy routing to the new master", func() bool {
			info, err := c.Do(ctx, "INFO", "backends").Text()
			return err == nil && strings.Contains(info, "master="+replica.Addr()+",")
		})
		eventually(t, 30*time.Second, "the new master's shard voting again", func() bool {
			info, err := c.Do(ctx, "INFO", "backends").Text()
			return err == nil && !strings.Contains(info, "quarantined")
		})
		t.Logf("proxy %d follows the failover", i)
	}
	clusters[2].Masters[0].Stop()
	t.Cleanup(clusters[2].Masters[0].Cont)
	for i, c := range clients {
		key := fmt.Sprintf("y%d", i)
		var err error
		eventually(t, 10*time.Second, "a lock that needs cluster 0's vote", func() bool {
			err = c.Do(ctx, "LOCK", key, 5000).Err()
			return err == nil
		})
		t.Logf("proxy %d locks through the new master", i)
	}
}
