package quorum

import (
	"time"
)

// The restart quarantine, one state machine for a node (its server
// restarted) and for one shard of a node that is a Redis Cluster (its
// master failed over or restarted). Both start through startLocked, are
// settled by reads of the other nodes' horizons under QuarantineAuto
// (quarantine_auto.go), and end by time alone: the veto compares the
// clock with until. Each logs one line when it starts (under
// QuarantineAuto once the first read says how long it lasts) and one
// when it ends.

// quarantine is one node's or one shard's restart quarantine.
type quarantine struct {
	node  int
	shard string // "" for the node's own quarantine
	// from is the restart: the server's start as its uptime tells, else
	// when the restart was seen. QuarantineAuto counts its cap from it.
	from time.Time
	// prevLook is when the proxy last looked at the run that restarted;
	// zero where it never saw it (the start-up rule).
	prevLook time.Time
	// until is when its votes count again; zero before any restart.
	until time.Time
	epoch uint64 // moved by each start; a read for an older one is dropped
	// auto: until comes from the other nodes' horizons (QuarantineAuto);
	// pending while no read was conclusive, reading while one is on its way.
	auto, pending, reading bool
	// young: started by the start-up rule (a restart this proxy did not
	// see), which looks only at the nodes that started before it.
	young bool
	// witness is, per other node, what the reads found (see witnessState);
	// bound is the latest end of a lock that node may know of.
	witness []witnessState
	bound   time.Time
	// own is the proxy's own record at the restart (the latest expiry it
	// had granted), zero when it had granted nothing: grants made later
	// are not on the restarted server.
	own time.Time
	// startLine logs the start, once until is known; ended is set once
	// the end is logged.
	startLine func(until time.Time, pending bool)
	ended     bool
}

// witnessState is what the auto reads found of one other node.
type witnessState uint8

const (
	witnessUnknown witnessState = iota // not read yet: the next read asks it
	witnessRead                        // its answer is in bound, but it does not count yet
	witnessCounted                     // it counts, its answer and quarantines in bound
	witnessNever                       // it restarted at the same time or later: it lost what it knew
)

// active tells whether the quarantine holds at now.
func (q *quarantine) active(now time.Time) bool { return now.Before(q.until) }

// startLocked starts q after a restart at from, which the proxy saw unless
// prevLook is zero (the start-up rule). A fixed quarantine lasts
// h.quarantine from fixedFrom, and a new start never shortens one that
// runs; QuarantineAuto's sits at its cap (from plus the horizon limit, or
// longer where one runs) until a read of the other horizons settles it.
// line logs the start, given the end and whether it is still pending.
func (h *health) startLocked(q *quarantine, from, fixedFrom, prevLook time.Time, line func(until time.Time, pending bool)) []func() {
	q.epoch++
	q.ended = false
	q.from, q.prevLook = from, prevLook
	q.young = prevLook.IsZero() && q.shard == ""
	switch {
	case h.quarantine == QuarantineAuto:
		q.auto, q.pending, q.reading = true, true, false
		q.witness = make([]witnessState, len(h.nodes))
		q.bound = time.Time{}
		q.own = time.Time{}
		if own, has := h.hz.ownRecord(); has {
			q.own = h.now().Add(own)
		}
		q.until = later(q.until, from.Add(h.limit))
		q.startLine = line
		return nil
	case h.quarantine > 0:
		q.auto, q.pending = false, false
		q.until = later(q.until, fixedFrom.Add(h.quarantine))
	}
	until := q.until
	return []func(){func() { line(until, false) }}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// eachLocked calls f with every quarantine: the nodes', then the shards'.
func (h *health) eachLocked(f func(q *quarantine)) {
	for i := range h.quar {
		f(&h.quar[i])
	}
	for _, m := range h.shards.byNode {
		for _, s := range m {
			f(&s.q)
		}
	}
}

// readsLocked starts a read of the other horizons for every auto
// quarantine still pending; the caller runs them after letting go of the
// lock.
func (h *health) readsLocked() []func() {
	if h.readHorizons == nil {
		return nil
	}
	var reads []func()
	now := h.now()
	h.eachLocked(func(q *quarantine) {
		if !q.auto || !q.pending || q.reading {
			return
		}
		if !q.active(now) {
			q.pending = false
			return
		}
		ask := make([]bool, len(q.witness))
		for j, w := range q.witness {
			ask[j] = j != q.node && w == witnessUnknown
		}
		q.reading = true
		epoch := q.epoch
		reads = append(reads, func() {
			h.readHorizons(q.node, ask, func(got []horizonRead) { h.settle(q, epoch, got) })
		})
	})
	return reads
}

// settle takes a read's answers for q of epoch and logs the start where
// this was the first read.
func (h *health) settle(q *quarantine, epoch uint64, got []horizonRead) {
	h.mu.Lock()
	if q.epoch != epoch {
		h.mu.Unlock()
		return
	}
	q.reading = false
	h.settleLocked(q, got)
	line, until, pending := q.startLine, q.until, q.pending
	q.startLine = nil
	logs := h.recheckLocked()
	h.mu.Unlock()
	for _, l := range logs {
		l()
	}
	if line != nil {
		line(until, pending)
	}
}

// endsLocked marks every quarantine that has ended since the last look,
// returning its end's log line.
func (h *health) endsLocked() []func() {
	var logs []func()
	now := h.now()
	h.eachLocked(func(q *quarantine) {
		if q.ended || q.until.IsZero() || q.active(now) || q.startLine != nil {
			return
		}
		q.ended = true
		name, shard := h.nodes[q.node].Name, q.shard
		logs = append(logs, func() {
			if shard == "" {
				h.log.Info("backend's restart quarantine ended: it votes again", "backend", name)
				return
			}
			h.log.Info("backend shard's restart quarantine ended: it votes again", "backend", name, "shard", shard)
		})
	})
	return logs
}

// quarantineName is the quarantine setting, as the log lines give it.
func (h *health) quarantineName() any {
	if h.quarantine == QuarantineAuto {
		return "auto"
	}
	return h.quarantine
}
