package quorum

import (
	"sync/atomic"
	"time"
)

// QuarantineAuto. A node that restarted may have lost locks it granted:
// only those on it at its restart (from), since while quarantined it votes
// for nothing. Each was granted on a majority, so every other node of that
// majority still keeps a horizon (HorizonKey) at least as long as the
// lock's remaining life, if it has not lost it since. Such a node is a
// witness:
//
//   - its server started before from (by more than youngTolerance, since
//     uptimes are whole seconds): one that restarted with the node or
//     later lost what it knew, and never counts;
//   - none of its own quarantines (its node's or its shards') is pending:
//     a running one, settled, is added to what it tells, since it covers
//     the locks that node lost at its own restart and it voted for nothing
//     since.
//
// Each witness is read once, as soon as it answers: a later read would
// also see the horizons of locks granted after the restart, failed tries
// among them. The quarantine is the longest of what the witnesses tell and
// the proxy's own record at the restart. It is conclusive once N-Q+1 of the
// N-1 others count (then they meet every majority the node was part of);
// for the start-up rule's quarantine (a restart this proxy did not see),
// once every node that started before it counts, if fewer: the rule covers
// locks granted with older nodes. Until then the quarantine is the own
// record and what was found, or, where the proxy granted nothing, the cap
// (MaxTTL plus the horizon's slack, from the restart); later looks read
// the nodes not counted yet. It never ends later than the cap. Until the
// first read answers, the node sits at the cap: a restart is safe from the
// moment it is seen.

// youngTolerance is how much earlier another node must have started for a
// node to count as restarted behind the proxy's back at start-up, and for
// a witness to have started before a restart: uptimes are whole seconds,
// and a cluster's nodes start a little apart.
const youngTolerance = 2 * time.Second

// horizonRead is one node's answer to a read of its horizon.
type horizonRead struct {
	asked bool
	ok    bool          // it answered, and did not restart meanwhile
	ttl   time.Duration // its horizon's remaining ttl, clamped (see clampRead)
	at    time.Time     // when the answer came
}

// settleLocked takes a read's answers into q and sets its end. An answer
// is taken once, as it comes; whether its node counts as a witness is
// judged again at every settle until it does (its own quarantine may
// settle or end meanwhile), without reading it again.
func (h *health) settleLocked(q *quarantine, got []horizonRead) {
	for j, rd := range got {
		if rd.asked && rd.ok && q.witness[j] == witnessUnknown {
			q.bound = later(q.bound, rd.at.Add(rd.ttl+drift(rd.ttl, h.hz.drift)))
			q.witness[j] = witnessRead
		}
	}
	for j, w := range q.witness {
		if w != witnessRead {
			continue
		}
		switch st, bound := h.witnessLocked(q, j); st {
		case witnessCounted:
			q.witness[j] = witnessCounted
			q.bound = later(q.bound, bound)
		case witnessNever:
			q.witness[j] = witnessNever
		}
	}
	conclusive := h.countedLocked(q) >= h.neededLocked(q)
	q.pending = !conclusive
	capped := q.from.Add(h.limit)
	if !conclusive && q.own.IsZero() {
		q.until = capped
		return
	}
	end := q.bound
	if !q.own.IsZero() {
		left := max(q.own.Sub(h.now()), 0)
		end = later(end, q.own.Add(drift(left, h.hz.drift)))
	}
	if end.After(capped) {
		end = capped
	}
	q.until = end
}

// witnessLocked tells whether node j is a witness for q (see the top of
// this file): counted, never, or not yet (witnessRead: a quarantine of
// its own is pending), and the end of j's own running quarantines, which
// its horizon's reader adds.
func (h *health) witnessLocked(q *quarantine, j int) (witnessState, time.Time) {
	now := h.now()
	state, bound := witnessCounted, time.Time{}
	check := func(o *quarantine) {
		if o.active(now) {
			if o.pending {
				state = witnessRead
			}
			bound = later(bound, o.until)
		}
	}
	check(&h.quar[j])
	for _, s := range h.shards.byNode[j] {
		check(&s.q)
	}
	// A server that started with q's node or later lost what its former
	// run knew, unless a quarantine of that start covers it.
	if !h.olderLocked(j, q) {
		if o := &h.quar[j]; o.epoch == 0 || !o.from.Equal(h.started[j]) {
			return witnessNever, time.Time{}
		}
	}
	return state, bound
}

// olderLocked tells whether node j's server started before q's restart:
// the proxy saw it up no later than its last look at the run that
// restarted, or its uptime says so (whole seconds: by youngTolerance). A
// node whose start is unknown counts as older.
func (h *health) olderLocked(j int, q *quarantine) bool {
	if !q.prevLook.IsZero() && !h.runSeen[j].IsZero() && !h.runSeen[j].After(q.prevLook) {
		return true
	}
	s := h.started[j]
	return s.IsZero() || s.Before(q.from.Add(-youngTolerance))
}

// countedLocked is how many witnesses q's reads counted.
func (h *health) countedLocked(q *quarantine) int {
	n := 0
	for _, w := range q.witness {
		if w == witnessCounted {
			n++
		}
	}
	return n
}

// neededLocked is how many witnesses make q's reads conclusive: N-Q+1, or
// for the start-up rule every node that started before q's node, if fewer.
func (h *health) neededLocked(q *quarantine) int {
	need := len(h.nodes) - Quorum(len(h.nodes)) + 1
	if !q.young {
		return need
	}
	return min(need, h.olderThanLocked(q.from, q.node))
}

// olderThanLocked counts the nodes other than skip whose server started
// more than youngTolerance before t.
func (h *health) olderThanLocked(t time.Time, skip int) int {
	n := 0
	for j, s := range h.started {
		if j != skip && !s.IsZero() && s.Before(t.Add(-youngTolerance)) {
			n++
		}
	}
	return n
}

// autoYoungLocked is the start-up rule under QuarantineAuto: a node whose
// server started less than the cap ago, and later than another node's
// did, may have restarted after granting locks with it, unseen by this
// proxy. It is quarantined as after a restart seen. Nodes that started
// together (within youngTolerance) are a cluster that started together.
func (h *health) autoYoungLocked() []func() {
	var logs []func()
	now := h.now()
	for i, s := range h.started {
		// epoch > 0: already quarantined once (the rule, or a restart seen).
		if s.IsZero() || now.Sub(s) >= h.limit || h.quar[i].epoch > 0 || h.olderThanLocked(s, i) == 0 {
			continue
		}
		logs = append(logs, h.startLocked(&h.quar[i], s, s, time.Time{}, h.logYoung(h.nodes[i].Name, now.Sub(s)))...)
	}
	return logs
}

// readHorizons reads the horizon of every node that ask names, for node
// i's quarantine, all at once, and calls done with the answers from the
// last one's goroutine. A read is no vote: it goes to each node directly,
// not through a round, so that a quarantined node's horizon is read too.
// An answer counts only if the node did not restart while it was asked.
func (c *Cluster) readHorizons(i int, ask []bool, done func([]horizonRead)) {
	got := make([]horizonRead, len(c.nodes))
	// One count per node asked, and one for the asking: the last to let
	// go, having seen every write to got, hands it on.
	var left atomic.Int32
	left.Store(1)
	finish := func() {
		if left.Add(-1) == 0 {
			done(got)
		}
	}
	start := time.Now() // the nodes' deadlines and the metrics are on the wall clock
	for j, n := range c.nodes {
		if !ask[j] || j == i || !c.horizons.watched[j].Load() {
			continue
		}
		left.Add(1)
		gen := c.horizons.genOf(j)
		n.Do(start.Add(c.cfg.NodeTimeout), Cmd{Kind: ReadHorizon, Key: HorizonKey}, ReceiverFunc(func(rep Reply) {
			c.reportNode(OpHorizon, j, start, rep)
			rd := horizonRead{asked: true, at: c.cfg.Now()}
			if rep.Err == nil && c.horizons.genOf(j) == gen {
				rd.ok, rd.ttl = true, c.horizons.clampRead(j, rep.TTL)
			}
			got[j] = rd
			finish()
		}))
	}
	finish()
}
