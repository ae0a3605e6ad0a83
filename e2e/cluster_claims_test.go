package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// setBoth is a replicated script (no library body): it sets both KEYS.
const setBoth = "return redis.call('set', KEYS[1], ARGV[1]) and redis.call('set', KEYS[2], ARGV[1])"

// A replicated script whose keys are in different slots gets each
// cluster's CROSSSLOT, so -NOQUORUM with that reason; the same keys under
// one hash tag share a slot and the script runs on every cluster.
func TestClusterCrossSlotScriptIsNoQuorum(t *testing.T) {
	if slot.Of("a") == slot.Of("b") {
		t.Fatal("a and b share a slot: the test needs two slots")
	}
	clusters := startClusters(t, 3, 0)
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	err := c.Do(ctx, "EVAL", setBoth, 2, "a", "b", "v").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") ||
		!strings.Contains(err.Error(), "CROSSSLOT Keys in request don't hash to the same slot") {
		t.Fatalf("EVAL over two slots: %v, want -NOQUORUM with CROSSSLOT", err)
	}
	for _, cl := range clusters {
		if v, _ := redlocktest.ClusterValue(t, cl, "a"); v != "<nil>" {
			t.Fatalf("a = %q on a cluster after CROSSSLOT", v)
		}
	}
	if got, err := c.Do(ctx, "EVAL", setBoth, 2, "{order:7}:a", "{order:7}:b", "v").Result(); err != nil || got != "OK" {
		t.Fatalf("EVAL over one hash tag: %v, %v, want OK", got, err)
	}
	for _, k := range []string{"{order:7}:a", "{order:7}:b"} {
		for _, cl := range clusters {
			if v, _ := redlocktest.ClusterValue(t, cl, k); v != "v" {
				t.Fatalf("%s = %q on a cluster, want v", k, v)
			}
		}
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A cluster:// address whose first seed is down reads the topology from
// its further seeds: LOCK and UNLOCK work over three such nodes.
func TestClusterDeadFirstSeedStillLocks(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	urls := make([]string, len(clusters))
	for i, cl := range clusters {
		urls[i] = "cluster://" + deadAddr(t) + "?seed=" + cl.Addrs()[0]
	}
	in := redlocktest.StartOverClusterURLs(t, clusters, urls, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	tok, validity := lock(t, c, "seeded", 10000)
	if validity <= 0 {
		t.Fatalf("LOCK validity %d", validity)
	}
	if n := redlocktest.Count(clusterValuesOf(t, clusters, "seeded"), tok); n < 2 {
		t.Fatalf("lock held on %d of 3 clusters, want a majority", n)
	}
	if n, err := c.Do(ctx, "UNLOCK", "seeded", tok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK: %d, %v", n, err)
	}
}

func clusterValuesOf(t *testing.T, clusters []*redistest.Cluster, key string) []string {
	t.Helper()
	out := make([]string, len(clusters))
	for i, cl := range clusters {
		out[i], _ = redlocktest.ClusterValue(t, cl, key)
	}
	return out
}

// A client's SUBSCRIBE through a proxy over Redis Cluster nodes gets the
// messages published through the proxy: the clients' pub/sub hub watches
// each cluster node after the quorum does, and a cluster node passes a
// later watcher's messages on from its pub/sub node.
func TestClusterClientSubscribeGetsMessages(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	ctx := ctxT(t)
	ps := in.Client(t, 2).Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	pub := in.Client(t, 2)
	if n, err := pub.Publish(ctx, "news", "hello").Result(); err != nil || n < 1 {
		t.Fatalf("PUBLISH = %d %v", n, err)
	}
	select {
	case m := <-ps.Channel():
		if m.Channel != "news" || m.Payload != "hello" {
			t.Fatalf("message %v, want news: hello", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber got no message")
	}
}
