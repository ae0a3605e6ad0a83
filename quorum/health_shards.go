package quorum

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/internal/oneline"
)

// A node that is a Redis Cluster answers each key from the master of the
// key's slot. A failover (a replica promoted without the master's last
// writes) or a master's restart without data loses the locks of that
// shard's slots only: it is a restart of that shard. The shard sits out
// every vote for the restart quarantine that a restarted node would get
// (fixed, or auto from the other nodes' horizons), while the node's other
// shards keep voting. A shard's answers carry its name (Reply.Shard), so
// the veto applied after every call finds its state.

// ShardInfo is one look at one shard of a node that is a Redis Cluster.
type ShardInfo struct {
	// Name identifies the shard across failovers: it stays the same when
	// a replica of the shard takes over its slots.
	Name string
	// Master is the address of the shard's master now.
	Master string
	// Info is the look at that master: its RunID (a new master, or a
	// restarted one, has a new one), or Err.
	Info ServerInfo
}

// ShardState is one shard's health, for INFO and metrics.
type ShardState struct {
	Name, Master, RunID string
	Up                  bool
	// Quarantined is true until QuarantinedUntil: the shard's master
	// changed or restarted, and its votes do not count yet.
	Quarantined       bool
	QuarantinedUntil  time.Time
	QuarantinePending bool
	LastError         string
}

// RunIDs returns every server identity of the node: its run_id, and its
// shards' masters' for a Redis Cluster.
func (st NodeState) RunIDs() []string {
	ids := []string{st.RunID}
	for _, s := range st.Shards {
		if s.RunID != "" {
			ids = append(ids, s.RunID)
		}
	}
	return ids
}

// shardHealth is one shard's record: its state for INFO (the quarantine's
// fields filled from q) and its restart quarantine.
type shardHealth struct {
	state ShardState
	q     quarantine
	// looked is the latest successful look at the shard's master.
	looked time.Time
}

// shardsHealth is, per node, its shards' records, by name.
type shardsHealth struct {
	byNode []map[string]*shardHealth
	// quarantined is, per node, whether any shard may be quarantined:
	// the veto's fast path reads it without the lock.
	quarantined []atomic.Bool
}

func newShardsHealth(n int) shardsHealth {
	return shardsHealth{byNode: make([]map[string]*shardHealth, n), quarantined: make([]atomic.Bool, n)}
}

// vetoShard is the error that replaces an answer of node i's shard while
// the shard is quarantined.
func (h *health) vetoShard(i int, shard string) error {
	if shard == "" || !h.shards.quarantined[i].Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.shards.byNode[i][shard]
	if s == nil || !s.q.active(h.now()) {
		return nil
	}
	return fmt.Errorf("%w: shard %s until %s: its master changed or restarted (run_id %s) and may have lost locks",
		ErrQuarantined, shard, s.q.until.Format("15:04:05.000"), s.state.RunID)
}

// observeShardsLocked takes in the shards of one look at node i: a shard
// whose run_id changed is quarantined.
func (h *health) observeShardsLocked(i int, shards []ShardInfo) []func() {
	if len(shards) == 0 {
		return nil
	}
	m := h.shards.byNode[i]
	first := m == nil
	if first {
		m = map[string]*shardHealth{}
		h.shards.byNode[i] = m
	}
	var logs []func()
	seen := make(map[string]bool, len(shards))
	for _, in := range shards {
		seen[in.Name] = true
		s := m[in.Name]
		if s == nil {
			s = &shardHealth{state: ShardState{Name: in.Name}, q: quarantine{node: i, shard: in.Name}}
			m[in.Name] = s
		}
		st := &s.state
		st.Master = in.Master
		if in.Info.Err != nil {
			st.Up, st.LastError = false, oneline.Of(in.Info.Err.Error())
			continue
		}
		// A new run_id of a known shard is a failover or a restart. A shard
		// that appears after the node's first look is a master the proxy
		// never saw, serving slots: it may be a replica promoted before the
		// proxy read it as one, so it is taken as restarted too (a master
		// that got its slots by migration, with their keys, then sits out
		// for nothing, which costs availability, not safety).
		if (st.RunID != "" && in.Info.RunID != st.RunID) || (st.RunID == "" && !first) {
			now := h.now()
			from := now // a master never seen before took over by now
			if !s.looked.IsZero() {
				from = h.restartTime(in.Info.Uptime, s.looked)
			}
			logs = append(logs, h.startLocked(&s.q, from, now, s.looked, h.logShardRestart(h.nodes[i].Name, *st, in.Info.RunID))...)
		}
		s.looked = h.now()
		st.RunID, st.Up, st.LastError = in.Info.RunID, true, ""
	}
	// A shard that serves no slot any more is forgotten, unless it sits
	// out a quarantine (its slots may come back to it) or its end is not
	// logged yet.
	now := h.now()
	for name, s := range m {
		if !seen[name] && !s.q.active(now) && (s.q.ended || s.q.until.IsZero()) {
			delete(m, name)
		}
	}
	h.recheckShardsLocked(i)
	return logs
}

// recheckShardsLocked sets node i's fast-path flag.
func (h *health) recheckShardsLocked(i int) {
	now := h.now()
	any := false
	for _, s := range h.shards.byNode[i] {
		any = any || s.q.active(now)
	}
	h.shards.quarantined[i].Store(any)
}

// shardStatesLocked returns node i's shards, by name.
func (h *health) shardStatesLocked(i int) []ShardState {
	m := h.shards.byNode[i]
	if len(m) == 0 {
		return nil
	}
	now := h.now()
	out := make([]ShardState, 0, len(m))
	for _, s := range m {
		st := s.state
		st.QuarantinedUntil = s.q.until
		st.Quarantined = s.q.active(now)
		st.QuarantinePending = st.Quarantined && s.q.pending
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b ShardState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sharedServerLocked is a run_id that nodes i and j both reach (a node's
// own, or one of its shards' masters'), or "".
func (h *health) sharedServerLocked(i, j int) string {
	ids := h.runIDsLocked(j)
	for _, id := range h.runIDsLocked(i) {
		if id != "" && slices.Contains(ids, id) {
			return id
		}
	}
	return ""
}

// runIDsLocked is node i's run_id, then its shards' in order (the same
// order on every look, so a refusal's reason does not change between
// looks).
func (h *health) runIDsLocked(i int) []string {
	var shards []string
	for _, s := range h.shards.byNode[i] {
		shards = append(shards, s.state.RunID)
	}
	slices.Sort(shards)
	return append([]string{h.nodes[i].RunID}, shards...)
}

func (h *health) logShardRestart(node string, st ShardState, newID string) func(time.Time, bool) {
	return h.startLine("backend shard's master changed or restarted and may have lost locks; the restart quarantine is off",
		"backend shard's master changed or restarted: it may have lost locks, so the shard sits out every vote until its quarantine ends",
		"backend", node, "shard", st.Name, "master", st.Master, "old_run_id", st.RunID, "run_id", newID)
}
