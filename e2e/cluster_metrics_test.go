package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// Over three Redis Clusters of three masters, /metrics has one up series
// per cluster node without a shard label, which the quorum alert sums
// (3, not 12), and one per shard labelled with its node and shard.
func TestClusterShardMetricsLabels(t *testing.T) {
	clusters := startClusters(t, 3, 0)
	in := redlocktest.StartOverClusters(t, clusters, redlocktest.Options{})
	var nodes, shards map[string]string
	var body string
	for range 200 {
		_, body = in.Page(t, "/metrics")
		nodes, shards = upSeries(body)
		if len(shards) == 9 && allUp(shards) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(nodes) != 3 || !allUp(nodes) {
		t.Fatalf("node up series %v, want 3 at 1:\n%s", nodes, body)
	}
	if len(shards) != 9 || !allUp(shards) {
		t.Fatalf("shard up series %v, want 9 at 1:\n%s", shards, body)
	}
	// Each of the record's nodes and shards has its series.
	for _, st := range in.Cluster.NodeStates() {
		node := `backend="` + st.Name + `"`
		if _, ok := nodes[node]; !ok {
			t.Fatalf("no node series %s:\n%s", node, body)
		}
		if len(st.Shards) != 3 {
			t.Fatalf("%s has %d shards, want 3", st.Name, len(st.Shards))
		}
		for _, sh := range st.Shards {
			if _, ok := shards[node+`,shard="`+sh.Name+`"`]; !ok {
				t.Fatalf("no shard series for %s of %s:\n%s", sh.Name, node, body)
			}
		}
	}
}

// upSeries splits the redlockd_backend_up lines of body into those
// without a shard label and those with one, by label set.
func upSeries(body string) (nodes, shards map[string]string) {
	nodes, shards = map[string]string{}, map[string]string{}
	for line := range strings.Lines(body) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "redlockd_backend_up{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		if strings.Contains(labels, `shard="`) {
			shards[labels] = value
		} else {
			nodes[labels] = value
		}
	}
	return nodes, shards
}

func allUp(series map[string]string) bool {
	for _, v := range series {
		if v != "1" {
			return false
		}
	}
	return true
}
