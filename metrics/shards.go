package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockd/redlockd/quorum"
)

// collectShards reports the up and quarantine gauges of each shard of a
// backend that is a Redis Cluster, labelled backend="<backend>" and
// shard="<shard>": a failover quarantines one shard, not the backend, and
// the backend series (no shard label, so shard="" to a query) stay the
// ones a quorum is counted on.
func (c *stateCollector) collectShards(ch chan<- prometheus.Metric, st quorum.NodeState) {
	for _, sh := range st.Shards {
		c.shards.emit(ch, sh.Up, sh.Quarantined, sh.QuarantinedUntil, st.Name, sh.Name)
	}
}
