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

// shardHealth is one shard's record.
type shardHealth struct {
	state   ShardState
	epoch   uint64 // moved by each quarantine started
	reading bool   // an auto read of the horizons is on its way
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
	if s == nil || !h.now().Before(s.state.QuarantinedUntil) {
		return nil
	}
	return fmt.Errorf("%w: shard %s until %s: its master changed or restarted (run_id %s) and may have lost locks",
		ErrQuarantined, shard, s.state.QuarantinedUntil.Format("15:04:05.000"), s.state.RunID)
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
			s = &shardHealth{state: ShardState{Name: in.Name}}
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
			h.quarantineShardLocked(s)
			logs = append(logs, h.logShardRestart(h.nodes[i].Name, *st, in.Info.RunID))
		}
		st.RunID, st.Up, st.LastError = in.Info.RunID, true, ""
	}
	// A shard that serves no slot any more is forgotten, unless it sits
	// out a quarantine (its slots may come back to it).
	now := h.now()
	for name, s := range m {
		if !seen[name] && !now.Before(s.state.QuarantinedUntil) {
			delete(m, name)
		}
	}
	h.recheckShardsLocked(i)
	return logs
}

// quarantineShardLocked starts a shard's quarantine: a fixed one, or auto's
// at its cap until a read of the other nodes' horizons settles it.
func (h *health) quarantineShardLocked(s *shardHealth) {
	now := h.now()
	s.epoch++
	switch {
	case h.quarantine == QuarantineAuto:
		s.state.QuarantinePending = true
		s.state.QuarantinedUntil = later(s.state.QuarantinedUntil, now.Add(h.limit))
	case h.quarantine > 0:
		s.state.QuarantinedUntil = later(s.state.QuarantinedUntil, now.Add(h.quarantine))
	}
}

// recheckShardsLocked sets node i's fast-path flag.
func (h *health) recheckShardsLocked(i int) {
	now := h.now()
	any := false
	for _, s := range h.shards.byNode[i] {
		any = any || now.Before(s.state.QuarantinedUntil)
	}
	h.shards.quarantined[i].Store(any)
}

// shardReadsLocked starts a read of the other nodes' horizons for every
// shard whose auto quarantine waits for a conclusive one, as
// autoReadsLocked does for nodes.
func (h *health) shardReadsLocked() []func() {
	if h.readHorizons == nil {
		return nil
	}
	var reads []func()
	now := h.now()
	for i, m := range h.shards.byNode {
		for _, s := range m {
			if !s.state.QuarantinePending || s.reading {
				continue
			}
			if !now.Before(s.state.QuarantinedUntil) {
				s.state.QuarantinePending = false
				continue
			}
			s.reading = true
			s, epoch := s, s.epoch
			reads = append(reads, func() {
				h.readHorizons(i, func(q time.Duration, conclusive bool) { h.settleShard(i, s, epoch, q, conclusive) })
			})
		}
	}
	return reads
}

// settleShard takes a read's outcome for a shard's quarantine of epoch.
func (h *health) settleShard(i int, s *shardHealth, epoch uint64, q time.Duration, conclusive bool) {
	h.mu.Lock()
	if s.epoch != epoch {
		h.mu.Unlock()
		return
	}
	s.reading = false
	s.state.QuarantinePending = !conclusive
	until := h.now().Add(q)
	s.state.QuarantinedUntil = until
	h.recheckShardsLocked(i)
	node, name := h.nodes[i].Name, s.state.Name
	h.mu.Unlock()
	h.log.Info("backend shard's restart quarantine set from the lock horizons",
		"backend", node, "shard", name, "quarantine", q, "until", until, "conclusive", conclusive)
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
		st.Quarantined = now.Before(st.QuarantinedUntil)
		st.QuarantinePending = st.Quarantined && st.QuarantinePending
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

func (h *health) logShardRestart(node string, st ShardState, newID string) func() {
	until := st.QuarantinedUntil
	return func() {
		if h.quarantine == 0 {
			h.log.Warn("backend shard's master changed or restarted and may have lost locks; the restart quarantine is off",
				"backend", node, "shard", st.Name, "master", st.Master, "old_run_id", st.RunID, "run_id", newID)
			return
		}
		h.log.Warn("backend shard's master changed or restarted: it may have lost locks, so the shard sits out every vote until its quarantine ends",
			"backend", node, "shard", st.Name, "master", st.Master, "old_run_id", st.RunID, "run_id", newID,
			"quarantine", h.quarantineName(), "until", until)
	}
}
