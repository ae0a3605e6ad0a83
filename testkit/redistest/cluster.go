package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/logbuf"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// clusterTimeout bounds the wait for a cluster to form or to settle.
const clusterTimeout = 15 * time.Second

// Cluster is a Redis Cluster of redis-server processes: Masters[i] serves
// an equal share of the slots, in order, and Replicas[i], when there are
// replicas, copy Masters[i].
type Cluster struct {
	Masters  []*Server
	Replicas []*Server
}

// StartCluster starts a cluster of masters masters, each with replicas
// replicas (0 or more), on free ports, slots assigned with CLUSTER
// ADDSLOTSRANGE and nodes joined with CLUSTER MEET, and waits until every
// node says cluster_state:ok. The node timeout is 500ms, so a failover
// takes about a second. args are appended to every server's.
func StartCluster(t testing.TB, masters, replicas int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range masters {
		c.Masters = append(c.Masters, startClusterServer(t, args))
	}
	for range masters * replicas {
		c.Replicas = append(c.Replicas, startClusterServer(t, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	for i, m := range c.Masters {
		lo, hi := i*Slots/masters, (i+1)*Slots/masters-1
		mustDo(t, ctx, m, "cluster", "addslotsrange", lo, hi)
	}
	all := c.Servers()
	for _, s := range all[1:] {
		mustDo(t, ctx, all[0], "cluster", "meet", "127.0.0.1", s.Port(), s.busPort())
	}
	waitFor(t, ctx, "every node to know every other", func() bool { return c.allKnown(ctx, len(all)) })
	for i, r := range c.Replicas {
		// A node counted as known may still be in its handshake, under a
		// name of its own, until which REPLICATE answers "Unknown node".
		id := c.Masters[i%masters].NodeID(t)
		waitFor(t, ctx, "a replica to replicate its master", func() bool {
			return r.Client().Do(ctx, "cluster", "replicate", id).Err() == nil
		})
	}
	c.WaitOK(t)
	return c
}

// startClusterServer starts one cluster-enabled server; its cluster bus
// gets a free port of its own (cluster-port), so that port+10000 need not
// be free.
func startClusterServer(t testing.TB, args []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH: %v", err)
	}
	s := &Server{bin: bin, dir: t.TempDir(), out: &logbuf.Buffer{}}
	t.Cleanup(s.cleanup)
	for try := 1; ; try++ {
		s.port = freePort(t)
		s.args = append([]string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "500", "--cluster-port", strconv.Itoa(freePort(t)),
		}, args...)
		err := s.run()
		if err == nil {
			return s
		}
		if !errors.Is(err, errExited) || try == startTries {
			t.Fatalf("redistest: %v\n%s", err, s.Output())
		}
	}
}

// Servers returns the masters, then the replicas.
func (c *Cluster) Servers() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Addrs returns every server's address, masters first.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Servers() {
		out = append(out, s.Addr())
	}
	return out
}

// busPort is the server's cluster bus port.
func (s *Server) busPort() int {
	for i := 0; i+1 < len(s.args); i++ {
		if s.args[i] == "--cluster-port" {
			p, _ := strconv.Atoi(s.args[i+1])
			return p
		}
	}
	return s.port + 10000
}

// NodeID returns the server's cluster node id (CLUSTER MYID).
func (s *Server) NodeID(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := s.Client().Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatalf("redistest: CLUSTER MYID on %s: %v", s.Addr(), err)
	}
	return id
}

// WaitOK polls, bounded, until every running server of the cluster says
// cluster_state:ok and agrees that every slot is assigned.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	waitFor(t, ctx, "cluster_state:ok on every node", func() bool {
		for _, s := range c.Servers() {
			if !s.Running() {
				continue
			}
			info, err := s.Client().ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, "cluster_slots_assigned:16384") {
				return false
			}
		}
		return true
	})
}

// WaitMaster polls, bounded, until every running server of the cluster
// names s as the master of slot.
func (c *Cluster) WaitMaster(t testing.TB, slot int, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	want := s.Port()
	waitFor(t, ctx, fmt.Sprintf("every node to name %s master of slot %d", s.Addr(), slot), func() bool {
		for _, o := range c.Servers() {
			if !o.Running() {
				continue
			}
			if port, ok := slotMasterPort(ctx, o, slot); !ok || port != want {
				return false
			}
		}
		return true
	})
}

// slotMasterPort reads which port s names as the master of slot.
func slotMasterPort(ctx context.Context, s *Server, slot int) (int, bool) {
	shards, err := s.Client().ClusterShards(ctx).Result()
	if err != nil {
		return 0, false
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int(r.Start) > slot || slot > int(r.End) {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && n.Health == "online" {
					return int(n.Port), true
				}
			}
		}
	}
	return 0, false
}

// MigrateSlot moves slot, and every key in it, from one master to another
// as redis-cli --cluster reshard does: IMPORTING on the target, MIGRATING
// on the source, MIGRATE the keys, then SETSLOT NODE on both. Commands
// sent meanwhile meet MOVED or ASK.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, from, to *Server) {
	t.Helper()
	c.BeginMigration(t, slot, from, to)
	c.MoveKeys(t, slot, from, to)
	c.EndMigration(t, slot, from, to)
}

// BeginMigration marks slot IMPORTING on to and MIGRATING on from.
func (c *Cluster) BeginMigration(t testing.TB, slot int, from, to *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	mustDo(t, ctx, to, "cluster", "setslot", slot, "importing", from.NodeID(t))
	mustDo(t, ctx, from, "cluster", "setslot", slot, "migrating", to.NodeID(t))
}

// MoveKeys MIGRATEs the keys of slot that from holds to to, in batches,
// until none is left.
func (c *Cluster) MoveKeys(t testing.TB, slot int, from, to *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	for range 10000 {
		keys, err := from.Client().ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d: %v", slot, err)
		}
		if len(keys) == 0 {
			return
		}
		args := []any{"migrate", "127.0.0.1", to.Port(), "", 0, 5000, "replace", "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		mustDo(t, ctx, from, args...)
	}
	t.Fatalf("redistest: slot %d never emptied", slot)
}

// EndMigration gives slot to to on both ends of the migration and on every
// other master.
func (c *Cluster) EndMigration(t testing.TB, slot int, from, to *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	id := to.NodeID(t)
	mustDo(t, ctx, to, "cluster", "setslot", slot, "node", id)
	mustDo(t, ctx, from, "cluster", "setslot", slot, "node", id)
	for _, m := range c.Masters {
		if m != to && m != from && m.Running() {
			mustDo(t, ctx, m, "cluster", "setslot", slot, "node", id)
		}
	}
}

// Running tells whether the server's process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// allKnown tells whether every server knows n nodes (itself included).
func (c *Cluster) allKnown(ctx context.Context, n int) bool {
	for _, s := range c.Servers() {
		info, err := s.Client().ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r\n") {
			return false
		}
	}
	return true
}

func mustDo(t testing.TB, ctx context.Context, s *Server, args ...any) {
	t.Helper()
	if err := s.Client().Do(ctx, args...).Err(); err != nil {
		t.Fatalf("redistest: %v on %s: %v", args, s.Addr(), err)
	}
}

// waitFor polls cond every 20ms until it holds or ctx ends (a test
// failure naming what).
func waitFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
