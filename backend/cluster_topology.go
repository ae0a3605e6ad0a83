package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
)

// minRefreshGap is the least time between two refreshes that a MOVED
// starts: a migration answers MOVED to many commands at once, and the
// MOVED itself already says where the slot went.
const minRefreshGap = 100 * time.Millisecond

// startRefresh starts a read of the topology unless one is on its way,
// and returns the channel that is closed when that read ends.
func (cl *Cluster) startRefresh() <-chan struct{} {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.refresh != nil {
		return cl.refresh
	}
	done := make(chan struct{})
	if cl.closed {
		close(done)
		return done
	}
	cl.refresh = done
	cl.wg.Add(1)
	go func() {
		defer cl.wg.Done()
		err := cl.readTopology()
		cl.mu.Lock()
		cl.refresh, cl.lastRef, cl.refreshErr = nil, time.Now(), err
		cl.mu.Unlock()
		close(done)
		cl.report()
	}()
	return done
}

// refreshSoon starts a refresh unless one ran within minRefreshGap.
func (cl *Cluster) refreshSoon() {
	cl.mu.Lock()
	recent := time.Since(cl.lastRef) < minRefreshGap
	cl.mu.Unlock()
	if !recent {
		cl.startRefresh()
	}
}

// readTopology asks the known masters, then the seeds, then every other
// server the topology ever named, for CLUSTER NODES until one answers, and
// publishes what it says. Every server named is a seed: when the masters
// and the given seeds are gone (a master killed, its replica promoted),
// the replicas seen before still find the cluster.
func (cl *Cluster) readTopology() error {
	var errs []error
	for _, addr := range cl.candidates() {
		slots, err := cl.askSlots(addr)
		if err == nil {
			cl.publish(slots)
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return fmt.Errorf("backend: CLUSTER NODES: %w", errors.Join(errs...))
}

func (cl *Cluster) candidates() []string {
	var out []string
	if t := cl.topo.Load(); t != nil {
		for _, s := range t.shards {
			out = append(out, s.addr)
		}
	}
	out = append(out, cl.seeds...)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, a := range cl.named {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// rememberLocked adds the servers of ranges, masters and replicas, to the
// servers the topology ever named.
func (cl *Cluster) rememberLocked(ranges []slotRange) {
	for _, r := range ranges {
		for _, a := range append([]string{r.addr}, r.replicaAddrs...) {
			if a != "" && !slices.Contains(cl.named, a) {
				cl.named = append(cl.named, a)
			}
		}
	}
}

// slotRange is one slot range of a master: its address and id, and the
// node ids of its replicas.
type slotRange struct {
	start, end   int
	addr, id     string
	replicas     []string // node ids
	replicaAddrs []string
}

// askSlots reads the topology from the server at addr, on a kept
// connection (see topologyConn): a refresh every health interval dials
// nothing.
func (cl *Cluster) askSlots(addr string) ([]slotRange, error) {
	h := cl.topologyConn(addr)
	ctx, cancel := context.WithTimeout(cl.ctx, h.cfg.Timeout)
	defer cancel()
	text, err := h.text(ctx, "cluster", "nodes")
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return parseNodes(text, host)
}

// topologyConn is the connection that CLUSTER NODES is asked on: the
// health connection of the node at addr when there is one (every master,
// and the first seed), else the one kept for the seed asked last.
func (cl *Cluster) topologyConn(addr string) *healthConn {
	cl.mu.Lock()
	n := cl.nodes[addr]
	cl.mu.Unlock()
	if n != nil {
		return &n.watch.health
	}
	if cl.asked == nil || cl.asked.addr != addr {
		if cl.asked != nil {
			cl.asked.h.close()
		}
		cl.asked = &seedConn{addr: addr, h: healthConn{cfg: nodeConfig(cl.optionsAt(addr), cl.opts, nil)}}
	}
	return &cl.asked.h
}

// parseNodes reads CLUSTER NODES: a range per slot range of each master
// (migration markers, in brackets, are left out: MOVED and ASK cover
// them), with the ids of the replicas that name that master. A node
// without an address announced is at host, the server that answered.
func parseNodes(text, host string) ([]slotRange, error) {
	type node struct {
		addr, id, master string
		slots            []string
	}
	var nodes []node
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		if h, p, err := net.SplitHostPort(addr); err == nil && h == "" {
			addr = net.JoinHostPort(host, p)
		}
		nodes = append(nodes, node{addr: addr, id: f[0], master: f[3], slots: f[8:]})
	}
	var out []slotRange
	for _, n := range nodes {
		var replicas, replicaAddrs []string
		for _, o := range nodes {
			if o.master == n.id {
				replicas = append(replicas, o.id)
				replicaAddrs = append(replicaAddrs, o.addr)
			}
		}
		for _, sl := range n.slots {
			r, ok := parseSlotRange(sl)
			if !ok {
				continue
			}
			r.addr, r.id, r.replicas, r.replicaAddrs = n.addr, n.id, replicas, replicaAddrs
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("backend: CLUSTER NODES names no master with slots")
	}
	return out, nil
}

// parseSlotRange reads "a-b" or "a"; a migration marker is not one.
func parseSlotRange(s string) (slotRange, bool) {
	if strings.HasPrefix(s, "[") {
		return slotRange{}, false
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || a < 0 || b < a || b >= slot.Count {
		return slotRange{}, false
	}
	return slotRange{start: a, end: b}, true
}

// publish makes ranges the topology. A shard keeps its name across
// failovers: a master that was a replica of a shard (or is a restarted
// master of it) takes the shard's name.
func (cl *Cluster) publish(ranges []slotRange) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return
	}
	cl.rememberLocked(ranges)
	t := &topology{}
	byAddr := map[string]*shard{}
	for _, r := range ranges {
		s := byAddr[r.addr]
		if s == nil {
			s = &shard{addr: r.addr, group: cl.groupLocked(r), first: r.start, node: cl.nodeLocked(r.addr)}
			byAddr[r.addr] = s
			t.shards = append(t.shards, s)
		}
		s.first = min(s.first, r.start)
		for n := r.start; n <= r.end; n++ {
			t.slots[n] = s
		}
	}
	cl.topo.Store(t)
}

// groupLocked is the name of the shard of r: the one its master or a
// replica was seen in before, else the master's address.
func (cl *Cluster) groupLocked(r slotRange) string {
	ids := append([]string{r.id}, r.replicas...)
	g := ""
	for _, id := range ids {
		if g = cl.groupOf[id]; g != "" {
			break
		}
	}
	if g == "" {
		g = r.addr
	}
	for _, id := range ids {
		if cl.groupOf[id] == "" {
			cl.groupOf[id] = g
		}
	}
	return g
}

// moved points slot at the master at addr when the topology knows it as
// a master, and says whether it did.
func (cl *Cluster) moved(n int, addr string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	s := cl.shardAt(addr)
	if s == nil {
		return false
	}
	if t := cl.topo.Load(); t.slots[n] != s {
		next := *t
		next.slots[n] = s
		cl.topo.Store(&next)
	}
	return true
}

// shardAt is the master of the topology at addr, or nil.
func (cl *Cluster) shardAt(addr string) *shard {
	if t := cl.topo.Load(); t != nil {
		for _, s := range t.shards {
			if s.addr == addr {
				return s
			}
		}
	}
	return nil
}

// info is the look at the cluster that the watchers get: one per master.
// It is not ready (false) until every master of the topology has been
// looked at, so that the first look names every shard's server.
func (cl *Cluster) info() (quorum.ServerInfo, bool) {
	in := quorum.ServerInfo{RunID: "cluster:" + cl.name, Uptime: -1}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	t := cl.topo.Load()
	if t == nil {
		// Until a read of the topology failed, there is nothing to say.
		in.RunID, in.Err = "", cl.refreshErr
		return in, cl.refreshErr != nil
	}
	for _, s := range t.shards {
		look, ok := cl.looks[s.addr]
		if !ok {
			return in, false
		}
		in.Shards = append(in.Shards, quorum.ShardInfo{Name: s.group, Master: s.addr, Info: look})
	}
	return in, true
}
