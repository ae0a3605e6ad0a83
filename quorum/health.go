package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/internal/oneline"
)

var (
	// ErrQuarantined is matched by the error of a node that restarted (its
	// run_id changed) less than Config.RestartQuarantine ago: it may have
	// lost locks that it granted, so its votes do not count yet.
	ErrQuarantined = errors.New("quorum: node quarantined")
	// ErrRefused is matched by the error of a node that is not an
	// independent node: a replica, or a second address of a server that
	// another node already reaches. Its votes never count.
	ErrRefused = errors.New("quorum: node refused")
)

// ServerInfo is what one look at a node's server found.
type ServerInfo struct {
	// RunID identifies one run of the server; it changes on every restart.
	RunID string
	// Replica is true when the server copies another one (it is not an
	// independent node).
	Replica bool
	// Replicas is the number of servers copying this one.
	Replicas int
	// Uptime is how long the server has been running at least (from INFO's
	// uptime_in_seconds); negative when it is not reported.
	// The first look's uptime feeds the start-up quarantine (see
	// quarantineYoungLocked).
	Uptime time.Duration
	// Err is set when the look failed; the other fields are then empty.
	Err error
	// Shards, for a node that is a Redis Cluster, is one look per shard
	// (the master serving a slot range). RunID is then the node's own
	// name: a restart or a failover is a shard's, seen as a new run_id of
	// that shard, and quarantines that shard alone.
	Shards []ShardInfo
}

// NodeState is one node's health as the Cluster sees it, for INFO and
// metrics.
type NodeState struct {
	Name string
	// Watched is false for nodes that cannot identify their server (the
	// in-memory nodes); the fields below from RunID on are then empty.
	Watched bool
	// Up is false when the last look at the server failed, or none has
	// been taken yet.
	Up       bool
	RunID    string
	Replica  bool
	Replicas int
	// Quarantined is true until QuarantinedUntil: the node restarted and
	// its votes do not count yet.
	Quarantined      bool
	QuarantinedUntil time.Time
	// QuarantinePending is true while an auto quarantine waits for a
	// conclusive read of the other nodes' lock horizons: until then
	// QuarantinedUntil is what the proxy knows so far (at most the cap).
	QuarantinePending bool
	// Refused, when not empty, says why the node's votes never count.
	Refused   string
	LastError string
	// Shards is each shard's state, for a node that is a Redis Cluster.
	Shards []ShardState
}

// refusedForever marks a node in health.blocked that is refused rather
// than quarantined.
const refusedForever = math.MaxInt64

type health struct {
	quarantine time.Duration // QuarantineAuto, 0 (off) or fixed
	limit      time.Duration // the longest a lock horizon can be: auto's cap
	now        func() time.Time
	log        *slog.Logger
	base       time.Time // origin of blocked's offsets

	hz *horizons
	// readHorizons reads the horizons of the nodes that ask names, for
	// node i's auto quarantine (Cluster.readHorizons).
	readHorizons func(i int, ask []bool, done func([]horizonRead))

	// blocked is read on every vote without a lock: 0 means the node's
	// votes count; otherwise the offset from base until which they do not.
	blocked []atomic.Int64

	mu    sync.Mutex
	nodes []NodeState
	// started is each node's server start, estimated from its uptime at
	// the first look and moved by every restart seen; zero until a look
	// reported an uptime.
	started []time.Time
	// quar is, per node, its restart quarantine (see quarantine.go).
	quar []quarantine
	// runSeen is, per node, the first look at its current run (run_id);
	// looked the latest successful look.
	runSeen, looked []time.Time
	// shards is the per-shard health of nodes that are Redis Clusters
	// (see health_shards.go).
	shards shardsHealth
}

func newHealth(nodes []Node, cfg Config) *health {
	h := &health{
		quarantine: cfg.RestartQuarantine,
		now:        cfg.Now,
		log:        cfg.Logger,
		base:       cfg.Now(),
		blocked:    make([]atomic.Int64, len(nodes)),
		nodes:      make([]NodeState, len(nodes)),
		started:    make([]time.Time, len(nodes)),
		quar:       make([]quarantine, len(nodes)),
		runSeen:    make([]time.Time, len(nodes)),
		looked:     make([]time.Time, len(nodes)),
		limit:      horizonLimit(cfg),
		shards:     newShardsHealth(len(nodes)),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	for i, n := range nodes {
		// A watched node is up once a look at its server succeeded.
		h.nodes[i] = NodeState{Name: n.Name(), Watched: true}
		h.quar[i].node = i
	}
	return h
}

// veto returns the error that replaces node i's answer, given by its shard
// shard ("" for a node that is one server), while its votes do not count,
// or nil. It is called after every node operation, so that a node that
// restarted while the operation ran is not counted either.
func (h *health) veto(i int, shard string) error {
	if err := h.vetoNode(i); err != nil {
		return err
	}
	return h.vetoShard(i, shard)
}

func (h *health) vetoNode(i int) error {
	until := h.blocked[i].Load()
	if until == 0 {
		return nil
	}
	if until != refusedForever && h.now().Sub(h.base) >= time.Duration(until) {
		// Ended: the votes after this one need not read the clock. A
		// quarantine begun meanwhile stored an offset of its own, which
		// this leaves in place.
		h.blocked[i].CompareAndSwap(until, 0)
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n, q := &h.nodes[i], &h.quar[i]
	switch {
	case n.Refused != "":
		return fmt.Errorf("%w: %s", ErrRefused, n.Refused)
	case q.active(h.now()):
		return fmt.Errorf("%w until %s: it restarted (run_id %s) and may have lost locks",
			ErrQuarantined, q.until.Format("15:04:05.000"), n.RunID)
	}
	return nil
}

// observe takes in one look at node i's server.
func (h *health) observe(i int, in ServerInfo) {
	h.mu.Lock()
	n := &h.nodes[i]
	if in.Err != nil {
		n.Up, n.LastError = false, oneline.Of(in.Err.Error())
		h.mu.Unlock()
		return
	}
	var logs []func()
	first := n.RunID == ""
	restarted := !first && in.RunID != n.RunID
	if first || restarted {
		h.started[i] = h.restartTime(in.Uptime, h.looked[i])
		h.runSeen[i] = h.now()
	}
	if restarted {
		h.hz.reset(i)
		logs = append(logs, h.startLocked(&h.quar[i], h.started[i], h.now(), h.looked[i], h.logRestart(*n, in.RunID))...)
	}
	h.looked[i] = h.now()
	if first {
		logs = append(logs, h.quarantineYoungLocked()...)
	}
	if in.Replicas > 0 && n.Replicas == 0 {
		logs = append(logs, h.logReplicas(n.Name, in.Replicas))
	}
	n.Up, n.LastError = true, ""
	n.RunID, n.Replica, n.Replicas = in.RunID, in.Replica, in.Replicas
	logs = append(logs, h.observeShardsLocked(i, in.Shards)...)
	logs = append(logs, h.recheckLocked()...)
	logs = append(logs, h.endsLocked()...)
	reads := h.readsLocked()
	h.mu.Unlock()
	for _, l := range logs {
		l()
	}
	for _, r := range reads {
		r()
	}
}

// restartTime dates the start of the run that a look now found, up for
// uptime (negative: not reported), where the proxy last saw the run
// before it at prevLook (zero: never).
// Uptime is a lower bound: the estimate errs late, which makes a
// quarantine derived from it longer, not shorter. A start from before
// prevLook is no restart of that server but another server behind the
// address (or a replica promoted, for a shard): it took over by now.
// Without an uptime, a restart is dated now and a first look not at all.
func (h *health) restartTime(uptime time.Duration, prevLook time.Time) time.Time {
	now := h.now()
	switch {
	case uptime >= 0 && !now.Add(-uptime).Before(prevLook):
		return now.Add(-uptime)
	case prevLook.IsZero():
		return time.Time{}
	}
	return now
}

// quarantineYoungLocked is the restart quarantine for restarts this proxy
// did not see, because it started later: it runs on every node's first
// look, so that the order in which the first looks arrive does not matter.
// A node up for less than the quarantine, while another node has been up
// for at least the quarantine, may have restarted empty after that other
// node granted locks with it; it sits out every vote until its start plus
// the quarantine. When no node is that old, the whole cluster started (or
// restarted) within the quarantine and none is quarantined: this rule
// cannot tell a cluster that is new from one that restarted together, nor
// protect a lock taken while every node was young (a young node among
// young peers; only a proxy that sees the run_id change covers that).
func (h *health) quarantineYoungLocked() []func() {
	if h.quarantine == QuarantineAuto {
		return h.autoYoungLocked()
	}
	if h.quarantine <= 0 || !h.anyOldLocked() {
		return nil
	}
	var logs []func()
	now := h.now()
	for i, s := range h.started {
		until := s.Add(h.quarantine)
		if s.IsZero() || !now.Before(until) || !h.quar[i].until.Before(until) {
			continue
		}
		logs = append(logs, h.startLocked(&h.quar[i], s, s, time.Time{}, h.logYoung(h.nodes[i].Name, now.Sub(s)))...)
	}
	return logs
}

// anyOldLocked tells whether some node's server has been up for at least
// the quarantine.
func (h *health) anyOldLocked() bool {
	now := h.now()
	return slices.ContainsFunc(h.started, func(s time.Time) bool { return !s.IsZero() && now.Sub(s) >= h.quarantine })
}

// recheckLocked recomputes which nodes are refused and every node's
// blocked offset, returning the log lines of the changes. A later node
// that reaches the same server as an earlier one is the one refused.
func (h *health) recheckLocked() []func() {
	var logs []func()
	for i := range h.nodes {
		n := &h.nodes[i]
		why := h.refusal(i)
		if why != n.Refused {
			logs = append(logs, h.logRefusal(n.Name, why))
			n.Refused = why
		}
		h.blocked[i].Store(h.blockedOffset(n, &h.quar[i]))
	}
	return logs
}

func (h *health) refusal(i int) string {
	n := h.nodes[i]
	if n.Replica {
		return "it is a replica of another server, not an independent node"
	}
	for j := range i {
		if id := h.sharedServerLocked(i, j); id != "" {
			return fmt.Sprintf("it is the same server as %s (run_id %s)", h.nodes[j].Name, id)
		}
	}
	return ""
}

func (h *health) blockedOffset(n *NodeState, q *quarantine) int64 {
	switch {
	case n.Refused != "":
		return refusedForever
	case q.until.IsZero():
		return 0
	}
	// At least 1, since 0 means "open": a quarantine that already ended
	// then still reads as ended.
	return max(int64(q.until.Sub(h.base)), 1)
}

// quarantineAttrs are the log attributes of a quarantine that lasts until
// until: the setting, the end, how long is left, and whether it is the
// bound known so far (auto, not conclusive yet).
func (h *health) quarantineAttrs(until time.Time, pending bool) []any {
	attrs := []any{"quarantine", h.quarantineName(), "until", until, "left", max(until.Sub(h.now()), 0).Round(time.Millisecond)}
	if pending {
		attrs = append(attrs, "pending", true)
	}
	return attrs
}

// startLine is the log line of a quarantine's start: msg with attrs and
// the quarantine's own (quarantineAttrs), or off with attrs alone where
// the restart quarantine is off.
func (h *health) startLine(off, msg string, attrs ...any) func(until time.Time, pending bool) {
	return func(until time.Time, pending bool) {
		if h.quarantine == 0 {
			h.log.Warn(off, attrs...)
			return
		}
		h.log.Warn(msg, append(attrs, h.quarantineAttrs(until, pending)...)...)
	}
}

func (h *health) logRestart(n NodeState, newID string) func(time.Time, bool) {
	return h.startLine("backend restarted and may have lost locks; the restart quarantine is off",
		"backend restarted: it may have lost locks, so it sits out every vote until its quarantine ends",
		"backend", n.Name, "old_run_id", n.RunID, "run_id", newID)
}

// logYoung is the start-up rule's line (never with the quarantine off).
func (h *health) logYoung(name string, uptime time.Duration) func(time.Time, bool) {
	why := "backend started recently while another has been up longer than the restart quarantine: "
	if h.quarantine == QuarantineAuto {
		why = "backend started recently, later than another: "
	}
	msg := why + "it may have lost locks, so it sits out every vote until its quarantine ends"
	return h.startLine(msg, msg, "backend", name, "uptime", uptime.Round(time.Second))
}

func (h *health) logReplicas(name string, replicas int) func() {
	return func() {
		h.log.Warn("backend has replicas attached: a failover can hand one lock to two clients; Redlock wants independent nodes",
			"backend", name, "replicas", replicas)
	}
}

func (h *health) logRefusal(name, why string) func() {
	return func() {
		if why == "" {
			h.log.Info("backend accepted again as an independent node", "backend", name)
			return
		}
		h.log.Error("backend refused: its votes do not count", "backend", name, "reason", why)
	}
}

// NodeStates reports a copy of each node's health, in configuration
// order.
func (c *Cluster) NodeStates() []NodeState {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]NodeState(nil), h.nodes...)
	now := h.now()
	for i := range out {
		q := &h.quar[i]
		out[i].QuarantinedUntil = q.until
		out[i].Quarantined = q.active(now)
		out[i].QuarantinePending = out[i].Quarantined && q.pending
		out[i].Shards = h.shardStatesLocked(i)
	}
	return out
}

// unwatched marks node i as one that cannot identify its server: it is
// up, and nothing vetoes its votes.
func (h *health) unwatched(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := &h.nodes[i]; n.RunID == "" {
		n.Watched, n.Up = false, true
		h.hz.watched[i].Store(false)
	}
}

// watch subscribes the health state and the waiters to every node: looks
// at its server, and releases announced through it by any proxy.
func (c *Cluster) watch() {
	for i, n := range c.nodes {
		w := Watcher{Server: func(in ServerInfo) { c.health.observe(i, in) }, Released: c.wake.notify}
		if !n.Watch(w) {
			c.health.unwatched(i)
		}
	}
}
