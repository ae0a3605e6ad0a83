package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/internal/redlocktest"
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
