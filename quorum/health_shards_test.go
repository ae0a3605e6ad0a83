package quorum_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// sharded has w stand for a Redis Cluster of two shards: each reply
// names its key's shard, "s1" for keys starting with "a", else "s2".
func sharded(w *watchedNode) quorum.Node {
	return &nodetest.Hooked{Node: w, After: func(cmd quorum.Cmd, rep *quorum.Reply) {
		rep.Shard = "s2"
		if strings.HasPrefix(cmd.Key, "a") {
			rep.Shard = "s1"
		}
	}}
}

// shardLooks reports a look at w's two shards, whose servers are s1 and
// s2.
func shardLooks(w *watchedNode, s1, s2 string) {
	w.report(quorum.ServerInfo{RunID: "cluster", Uptime: -1, Shards: []quorum.ShardInfo{
		{Name: "s1", Master: "m1", Info: quorum.ServerInfo{RunID: s1}},
		{Name: "s2", Master: "m2", Info: quorum.ServerInfo{RunID: s2}},
	}})
}

// A new run_id of one shard of a cluster node quarantines that shard
// alone: its keys' votes are vetoed until the quarantine ends, while the
// other shard's keys still count.
func TestShardRestartQuarantinesThatShard(t *testing.T) {
	for _, quarantine := range []time.Duration{time.Minute, 0} {
		c, ws, clk := unseenCluster(t, quarantine)
		c2, err := quorum.New([]quorum.Node{sharded(ws[0]), ws[1], ws[2]}, c.Config())
		if err != nil {
			t.Fatal(err)
		}
		shardLooks(ws[0], "x1", "x2")
		ws[1].look("r1", "master", 0)
		ws[2].look("r2", "master", 0)
		lockNeedsNodeA(ws)
		shardLooks(ws[0], "x1-failover", "x2")
		_, errA := c2.Acquire(context.Background(), "a-key", "t1", time.Second)
		_, errB := c2.Acquire(context.Background(), "b-key", "t2", time.Second)
		shards := c2.NodeStates()[0].Shards
		if quarantine == 0 {
			if errA != nil || errB != nil {
				t.Fatalf("quarantine off: Acquire = %v, %v; want both", errA, errB)
			}
			continue
		}
		if !errors.Is(errA, quorum.ErrQuarantined) || !strings.Contains(errA.Error(), "shard s1") {
			t.Fatalf("Acquire on the failed-over shard = %v, want its quarantine", errA)
		}
		if errB != nil {
			t.Fatalf("Acquire on the other shard = %v, want the lock", errB)
		}
		if len(shards) != 2 || !shards[0].Quarantined || shards[0].RunID != "x1-failover" || shards[1].Quarantined {
			t.Fatalf("shard states %+v, want s1 alone quarantined", shards)
		}
		clk.advance(time.Minute)
		if _, err := c2.Acquire(context.Background(), "a-key2", "t3", time.Second); err != nil {
			t.Fatalf("after the quarantine: %v", err)
		}
	}
}

// Two cluster nodes whose shards share a server are one node counted
// twice: the later one is refused.
func TestClusterNodesSharingAServerRefused(t *testing.T) {
	c, ws, _ := unseenCluster(t, 0)
	c2, err := quorum.New([]quorum.Node{sharded(ws[0]), sharded(ws[1]), ws[2]}, c.Config())
	if err != nil {
		t.Fatal(err)
	}
	shardLooks(ws[0], "x1", "x2")
	ws[1].report(quorum.ServerInfo{RunID: "cluster-b", Uptime: -1, Shards: []quorum.ShardInfo{{Name: "s9", Info: quorum.ServerInfo{RunID: "x2"}}}})
	ws[2].look("r2", "master", 0)
	if st := c2.NodeStates()[1]; !strings.Contains(st.Refused, "same server") {
		t.Fatalf("node B state %+v, want refused as the same server", st)
	}
}

// A shard that appears after the node's first look (a master the proxy
// never saw, such as a replica promoted before it was read as one) is
// taken as restarted; the shards seen at the first look are not.
func TestNewShardAfterFirstLookQuarantined(t *testing.T) {
	c, ws, _ := unseenCluster(t, time.Minute)
	c2, err := quorum.New([]quorum.Node{sharded(ws[0]), ws[1], ws[2]}, c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ws[0].report(quorum.ServerInfo{RunID: "cluster", Uptime: -1, Shards: []quorum.ShardInfo{
		{Name: "s2", Master: "m2", Info: quorum.ServerInfo{RunID: "x2"}},
	}})
	shardLooks(ws[0], "y1", "x2")
	shards := c2.NodeStates()[0].Shards
	if len(shards) != 2 || shards[0].Name != "s1" || !shards[0].Quarantined || shards[1].Quarantined {
		t.Fatalf("shard states %+v, want the new s1 quarantined and s2 not", shards)
	}
}
