package commands

import (
	"fmt"
	"strings"

	"github.com/redlockd/redlockd/quorum"
)

// shardLines are the INFO lines of a backend that is a Redis Cluster: one
// per shard, saying whether its votes count (a failover quarantines the
// shard alone) and which master serves it now.
func shardLines(i int, st quorum.NodeState) string {
	var b strings.Builder
	for j, sh := range st.Shards {
		fmt.Fprintf(&b, "backend%d_shard%d:name=%s,master=%s,state=%s,run_id=%s",
			i, j, sh.Name, sh.Master, shardState(sh), sh.RunID)
		writeQuarantine(&b, sh.Quarantined, sh.QuarantinedUntil, sh.QuarantinePending)
		if sh.LastError != "" {
			fmt.Fprintf(&b, ",last_error=%s", infoValue(sh.LastError))
		}
		b.WriteString("\r\n")
	}
	return b.String()
}

func shardState(sh quorum.ShardState) string {
	switch {
	case !sh.Up:
		return "down"
	case sh.Quarantined:
		return "quarantined"
	}
	return "up"
}
