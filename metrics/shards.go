package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlockd/redlockd/quorum"
)

// collectShards reports the up and quarantine gauges of each shard of a
// backend that is a Redis Cluster, under the backend label
// "<backend>/<shard>": a failover quarantines one shard, not the backend.
func (c *stateCollector) collectShards(ch chan<- prometheus.Metric, st quorum.NodeState) {
	for _, sh := range st.Shards {
		name := st.Name + "/" + sh.Name
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, b2f(sh.Up), name)
		ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, b2f(sh.Quarantined), name)
		var left float64
		if sh.Quarantined {
			left = max(time.Until(sh.QuarantinedUntil).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.quarantineLeft, prometheus.GaugeValue, left, name)
	}
}
