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

// clusterTimeout bounds the wait for a cluster to settle.
const clusterTimeout = 15 * time.Second

// formTimeout bounds the whole of StartCluster's formation: meeting,
// replication and the wait for cluster_state:ok.
const formTimeout = 2 * clusterTimeout

const (
	// probeTimeout bounds one command of a wait, so that a server slow
	// to answer costs one round of the wait, not all of it.
	probeTimeout = 2 * time.Second
	// pollInterval spaces the rounds of a wait.
	pollInterval = 50 * time.Millisecond
	// resendEvery spaces the resends of one command whose effect a wait
	// has not seen yet. It is longer than the handshake timeout at the
	// harness's node timeout (the larger of the node timeout and 1s),
	// after which a node drops a handshake that got no answer.
	resendEvery = 1500 * time.Millisecond
)

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
// node says cluster_state:ok and agrees on who serves which slots and who
// replicates whom. The node timeout is 500ms, so a failover takes about a
// second. args are appended to every server's.
//
// Formation is bounded by formTimeout in all. The gossip that forms a
// cluster can lose a step under load (a handshake that gets no answer
// within the node timeout is dropped, and never retried), so every wait
// of it sends again the command that causes what it waits for.
func StartCluster(t testing.TB, masters, replicas int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range masters {
		c.Masters = append(c.Masters, startClusterServer(t, args))
	}
	for range masters * replicas {
		c.Replicas = append(c.Replicas, startClusterServer(t, args))
	}
	c.form(t)
	return c
}

// form makes the started servers one cluster: distinct config epochs, a
// master's share of the slots on each master, every node known to every
// other, each replica copying its master; then it waits for the settled
// state that StartCluster promises.
func (c *Cluster) form(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	all := c.Servers()
	// Distinct epochs from the start, as redis-cli --cluster create gives
	// them: the masters need not resolve an epoch collision by gossip
	// before the cluster is settled. A node takes one only while it knows
	// no other, so this comes before any MEET.
	for i, s := range all {
		mustDo(t, ctx, s, "cluster", "set-config-epoch", i+1)
	}
	for i, m := range c.Masters {
		lo, hi := c.shard(i)
		mustDo(t, ctx, m, "cluster", "addslotsrange", lo, hi)
	}
	join(t, ctx, all)
	sent := resends{}
	settle(t, ctx, "the cluster to settle", func(ctx context.Context) []string {
		return c.formStep(ctx, sent)
	})
}

// shard is the range of slots that Masters[i] serves.
func (c *Cluster) shard(i int) (lo, hi int) {
	n := len(c.Masters)
	return i * Slots / n, (i+1)*Slots/n - 1
}

// join waits, bounded by ctx, until every server knows every other,
// sending CLUSTER MEET again for every pair where one does not know the
// other yet.
func join(t testing.TB, ctx context.Context, servers []*Server) {
	t.Helper()
	sent := resends{}
	settle(t, ctx, "every node to know every other", func(ctx context.Context) []string {
		_, missing := meetMissing(ctx, servers, sent)
		return missing
	})
}

// formStep is one round of the wait for a formed cluster. It reads every
// node's view, sends again whatever has not taken effect (MEET for a node
// not known, REPLICATE for a replica that copies no master or the wrong
// one, a takeover for a master that a failover under load made a
// replica), and says what is still missing.
func (c *Cluster) formStep(ctx context.Context, sent resends) []string {
	all := c.Servers()
	views, missing := meetMissing(ctx, all, sent)
	ids := map[*Server]string{}
	for s, v := range views {
		ids[s] = v.self.id
	}
	if len(ids) < len(all) {
		return missing // a server that did not answer: no id to check by
	}
	for _, m := range c.Masters {
		if self := views[m].self; self.has("slave") {
			missing = append(missing, fmt.Sprintf("master %s is a replica of %s", m.Addr(), self.master))
			// The failover that made it a replica may have been brief
			// load; it takes its slots back without a vote.
			if sent.due("takeover " + m.Addr()) {
				if err := probe(ctx, m, "cluster", "failover", "takeover"); err != nil {
					missing = append(missing, fmt.Sprintf("CLUSTER FAILOVER TAKEOVER on %s: %v", m.Addr(), err))
				}
			}
		}
	}
	for j, r := range c.Replicas {
		want := ids[c.Masters[j%len(c.Masters)]]
		self := views[r].self
		if self.has("slave") && self.master == want {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s does not replicate %s", r.Addr(), want))
		// REPLICATE needs the master known by its id (not in a handshake
		// under a name of its own) and a node without slots; a promoted
		// replica gives its slots back when its master takes over.
		if !views[r].knows(want) || len(self.slots) > 0 || !sent.due("replicate "+r.Addr()) {
			continue
		}
		if err := probe(ctx, r, "cluster", "replicate", want); err != nil {
			missing = append(missing, fmt.Sprintf("CLUSTER REPLICATE on %s: %v", r.Addr(), err))
		}
	}
	// Every node's view must agree with the intended layout; gossip
	// carries it to every node that knows the others, which the MEETs
	// above see to.
	for _, s := range all {
		v := views[s]
		for i, m := range c.Masters {
			lo, hi := c.shard(i)
			e, ok := v.nodes[ids[m]]
			if !ok || !e.has("master") || strings.Join(e.slots, " ") != slotRange(lo, hi) {
				missing = append(missing, fmt.Sprintf("%s does not see %s as master of %s", s.Addr(), m.Addr(), slotRange(lo, hi)))
			}
		}
		for j, r := range c.Replicas {
			e, ok := v.nodes[ids[r]]
			if want := ids[c.Masters[j%len(c.Masters)]]; !ok || !e.has("slave") || e.master != want {
				missing = append(missing, fmt.Sprintf("%s does not see %s as a replica of %s", s.Addr(), r.Addr(), want))
			}
		}
	}
	return append(missing, stateOKMissing(ctx, all)...)
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

// WaitOK waits, bounded, until every running server of the cluster says
// cluster_state:ok and agrees that every slot is assigned. Meanwhile it
// sends CLUSTER MEET again wherever one running server does not know
// another.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	sent := resends{}
	settle(t, ctx, "cluster_state:ok on every node", func(ctx context.Context) []string {
		running := c.running()
		_, missing := meetMissing(ctx, running, sent)
		return append(missing, stateOKMissing(ctx, running)...)
	})
}

// WaitMaster waits, bounded, until every running server of the cluster
// names s as the master of slot. Meanwhile it sends CLUSTER MEET again
// wherever one running server does not know another.
func (c *Cluster) WaitMaster(t testing.TB, slot int, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	want := s.Port()
	sent := resends{}
	settle(t, ctx, fmt.Sprintf("every node to name %s master of slot %d", s.Addr(), slot), func(ctx context.Context) []string {
		running := c.running()
		_, missing := meetMissing(ctx, running, sent)
		for _, o := range running {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			port, ok := slotMasterPort(pctx, o, slot)
			cancel()
			if !ok || port != want {
				missing = append(missing, fmt.Sprintf("%s names port %d (found: %v)", o.Addr(), port, ok))
			}
		}
		return missing
	})
}

// running returns the servers whose process is alive.
func (c *Cluster) running() []*Server {
	var out []*Server
	for _, s := range c.Servers() {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
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
		// A loaded target can take longer than MIGRATE's timeout; with
		// REPLACE, sending the batch again is harmless, and the next
		// round lists what is left.
		err = from.Client().Do(ctx, args...).Err()
		if err != nil && !strings.HasPrefix(err.Error(), "IOERR") {
			t.Fatalf("redistest: MIGRATE on %s: %v", from.Addr(), err)
		}
		if err != nil {
			select {
			case <-ctx.Done():
				t.Fatalf("redistest: MIGRATE on %s: %v", from.Addr(), err)
			case <-time.After(pollInterval):
			}
		}
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

func mustDo(t testing.TB, ctx context.Context, s *Server, args ...any) {
	t.Helper()
	if err := s.Client().Do(ctx, args...).Err(); err != nil {
		t.Fatalf("redistest: %v on %s: %v", args, s.Addr(), err)
	}
}

// probe sends one command of a wait, bounded by probeTimeout.
func probe(ctx context.Context, s *Server, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return s.Client().Do(ctx, args...).Err()
}

// settle runs step, bounded by ctx, until it reports nothing missing. step
// reads the servers' state and sends again whatever command has not taken
// effect yet; on timeout the test fails naming what it waited for and
// what step last found missing.
func settle(t testing.TB, ctx context.Context, what string, step func(ctx context.Context) []string) {
	t.Helper()
	for {
		missing := step(ctx)
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: timed out waiting for %s; still missing:\n  %s", what, strings.Join(missing, "\n  "))
		case <-time.After(pollInterval):
		}
	}
}

// resends spaces out the resends of a wait: a command, by key, is due
// when it was never sent or its last send is resendEvery old.
type resends map[string]time.Time

// due tells whether the command key may be sent now, and if so counts it
// as sent.
func (r resends) due(key string) bool {
	if last, ok := r[key]; ok && time.Since(last) < resendEvery {
		return false
	}
	r[key] = time.Now()
	return true
}

// meetMissing reads every server's CLUSTER NODES and, for every server s
// that does not know another server o by o's node id, sends CLUSTER MEET
// to o on s (when due). It returns the views it read, by server, and
// what is missing: the pairs not known yet, and the servers that did not
// answer.
//
// A MEET while the handshake with that address is under way does
// nothing, and a MEET that reaches a node already known ends in the
// known entry, so sending one again is safe; it is what brings back a
// handshake that the sender dropped for want of an answer.
func meetMissing(ctx context.Context, servers []*Server, sent resends) (map[*Server]nodesView, []string) {
	var missing []string
	views := map[*Server]nodesView{}
	for _, s := range servers {
		v, err := readNodes(ctx, s)
		if err != nil {
			missing = append(missing, fmt.Sprintf("CLUSTER NODES on %s: %v", s.Addr(), err))
			continue
		}
		views[s] = v
	}
	for _, s := range servers {
		v, ok := views[s]
		if !ok {
			continue
		}
		for _, o := range servers {
			ov, ok := views[o]
			if o == s || !ok || v.knows(ov.self.id) {
				continue
			}
			missing = append(missing, fmt.Sprintf("%s does not know %s (%s)", s.Addr(), o.Addr(), ov.self.id))
			if !sent.due("meet " + s.Addr() + " " + o.Addr()) {
				continue
			}
			if err := probe(ctx, s, "cluster", "meet", "127.0.0.1", o.Port(), o.busPort()); err != nil {
				missing = append(missing, fmt.Sprintf("CLUSTER MEET %s on %s: %v", o.Addr(), s.Addr(), err))
			}
		}
	}
	return views, missing
}

// stateOKMissing says which servers do not yet say cluster_state:ok with
// every slot assigned.
func stateOKMissing(ctx context.Context, servers []*Server) []string {
	var missing []string
	for _, s := range servers {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		info, err := s.Client().ClusterInfo(pctx).Result()
		cancel()
		switch {
		case err != nil:
			missing = append(missing, fmt.Sprintf("CLUSTER INFO on %s: %v", s.Addr(), err))
		case !strings.Contains(info, "cluster_state:ok\r\n"):
			missing = append(missing, s.Addr()+" is not cluster_state:ok")
		case !strings.Contains(info, "cluster_slots_assigned:"+strconv.Itoa(Slots)+"\r\n"):
			missing = append(missing, s.Addr()+" does not see every slot assigned")
		}
	}
	return missing
}

// nodesView is one server's CLUSTER NODES.
type nodesView struct {
	self  nodeEntry            // the line flagged myself
	nodes map[string]nodeEntry // every line, by node id
}

// nodeEntry is one line of CLUSTER NODES.
type nodeEntry struct {
	id     string
	port   int      // client port; 0 for a node flagged noaddr
	flags  []string // myself, master, slave, fail?, fail, handshake, noaddr, ...
	master string   // a replica's master id; "-" for a master
	slots  []string // owned slots and ranges, without [importing/migrating] entries
}

func (e nodeEntry) has(flag string) bool {
	for _, f := range e.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// knows tells whether the view holds the node id as a node it talks to: a
// node still in its handshake is listed under a random id of its own,
// and one flagged noaddr has no address to reach it at. A node flagged
// fail is known: the cluster keeps reconnecting to it, and clears the
// flag once it answers, which no MEET would hasten.
func (v nodesView) knows(id string) bool {
	e, ok := v.nodes[id]
	return ok && !e.has("handshake") && !e.has("noaddr")
}

// readNodes reads s's CLUSTER NODES, bounded by probeTimeout.
func readNodes(ctx context.Context, s *Server) (nodesView, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	text, err := s.Client().ClusterNodes(ctx).Result()
	if err != nil {
		return nodesView{}, err
	}
	return parseNodes(text)
}

// parseNodes parses CLUSTER NODES: per line, id, ip:port@cport[,hostname],
// flags, master, ping-sent, pong-recv, config-epoch, link-state, slots.
func parseNodes(text string) (nodesView, error) {
	v := nodesView{nodes: map[string]nodeEntry{}}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nodesView{}, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		e := nodeEntry{id: f[0], flags: strings.Split(f[2], ","), master: f[3]}
		addr, _, _ := strings.Cut(f[1], "@")
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			e.port, _ = strconv.Atoi(addr[i+1:])
		}
		for _, sl := range f[8:] {
			if !strings.HasPrefix(sl, "[") {
				e.slots = append(e.slots, sl)
			}
		}
		v.nodes[e.id] = e
		if e.has("myself") {
			v.self = e
		}
	}
	if v.self.id == "" {
		return nodesView{}, fmt.Errorf("CLUSTER NODES without a myself line:\n%s", text)
	}
	return v, nil
}

// slotRange is a range of slots as CLUSTER NODES writes it.
func slotRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
}
