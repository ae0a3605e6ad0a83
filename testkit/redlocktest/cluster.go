package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// ClusterURL is the cluster:// backend address of c: its first master,
// with every other server as a further seed.
func ClusterURL(c *redistest.Cluster) string {
	addrs := c.Addrs()
	u := "cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "seed=" + a
	}
	return u
}

// StartOverClusters serves redlockd over Redis Clusters, each one node
// of the quorum (cluster://).
func StartOverClusters(t testing.TB, clusters []*redistest.Cluster, opts Options) *Instance {
	t.Helper()
	in := &Instance{Clusters: clusters}
	nodes := make([]quorum.Node, len(clusters))
	for i, c := range clusters {
		n, err := backend.NewCluster(ClusterURL(c), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	in.start(t, nodes, opts)
	return in
}

// ClusterValue reads key on the master of c that serves its slot (as
// the masters themselves say: the one that answers without MOVED), and
// returns its value ("<nil>" when absent) and that master.
func ClusterValue(t testing.TB, c *redistest.Cluster, key string) (string, *redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, m := range c.Servers() {
		if !m.Running() {
			continue
		}
		v, err := m.Client().Get(ctx, key).Result()
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "MOVED"):
			continue // not its master (a replica answers MOVED too)
		case errors.Is(err, redis.Nil):
			return "<nil>", m
		case err != nil:
			return fmt.Sprintf("<err %v>", err), m
		}
		return v, m
	}
	return "<no master>", nil
}

func clusterValues(t testing.TB, clusters []*redistest.Cluster, key string) []string {
	t.Helper()
	vals := make([]string, len(clusters))
	for i, c := range clusters {
		vals[i], _ = ClusterValue(t, c, key)
	}
	return vals
}

// StartOverClusterURLs serves redlockd over Redis Clusters given by
// their cluster:// addresses (urls[i] reaches clusters[i]), for tests of
// the address itself (a dead first seed, say).
func StartOverClusterURLs(t testing.TB, clusters []*redistest.Cluster, urls []string, opts Options) *Instance {
	t.Helper()
	in := &Instance{Clusters: clusters}
	nodes := make([]quorum.Node, len(urls))
	for i, u := range urls {
		n, err := backend.NewCluster(u, backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	in.start(t, nodes, opts)
	return in
}
