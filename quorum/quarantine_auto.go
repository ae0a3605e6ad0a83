package quorum

import (
	"time"
)

// QuarantineAuto. A node that restarted may have lost locks it granted.
// Each such lock was granted on a majority, so every other node of that
// majority that did not restart since still keeps a horizon (HorizonKey)
// at least as long as the lock's remaining life. A read of the other
// nodes' horizons that reaches enough of them (N-Q+1 of the N-1 others:
// then it meets every majority the restarted node was part of) bounds the
// life of every lost lock: the node sits out every vote until the longest
// of them ends. Nodes that are themselves quarantined (they lost their
// horizon too) or refused do not count as answers.
//
// A read that reaches fewer is not conclusive: the quarantine is then what
// the read found and the proxy's own record of the locks it granted, or,
// where this proxy granted none, the cap (MaxTTL plus the horizon's
// slack); every later look at any node reads again while the quarantine
// lasts, until a read is conclusive. Until the first read answers, the
// node sits at the cap: a restart is safe from the moment it is seen.

// autoState is one node's QuarantineAuto bookkeeping.
type autoState struct {
	epoch   uint64 // moved by each quarantine started; a read of an older one is dropped
	pending bool   // no conclusive read yet
	reading bool   // a read is on its way
}

// youngTolerance is how much earlier another node must have started for a
// node to count as restarted behind the proxy's back at start-up: uptimes
// are whole seconds, and a cluster's nodes start a little apart.
const youngTolerance = 2 * time.Second

// autoStartLocked quarantines node i at the cap, counted from start (its
// server's start, or when it was seen back), until a read of the other
// horizons shortens it.
func (h *health) autoStartLocked(i int, start time.Time) {
	if s := h.started[i]; !s.IsZero() && s.Before(start) {
		start = s
	}
	a := &h.auto[i]
	a.epoch++
	a.pending = true
	// No lock granted before the node's start lives longer than the cap.
	h.nodes[i].QuarantinedUntil = later(h.nodes[i].QuarantinedUntil, start.Add(h.limit))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
		n := &h.nodes[i]
		// epoch > 0: already quarantined once (the rule, or a restart seen).
		if s.IsZero() || now.Sub(s) >= h.limit || h.auto[i].epoch > 0 || !h.startedBeforeLocked(s) {
			continue
		}
		h.autoStartLocked(i, s)
		logs = append(logs, h.logYoung(n.Name, now.Sub(s), n.QuarantinedUntil))
	}
	return logs
}

// startedBeforeLocked tells whether some node's server started more than
// youngTolerance before s.
func (h *health) startedBeforeLocked(s time.Time) bool {
	for _, o := range h.started {
		if !o.IsZero() && o.Before(s.Add(-youngTolerance)) {
			return true
		}
	}
	return false
}

// autoReadsLocked starts a read of the other horizons for every node whose
// auto quarantine is still waiting for a conclusive one (and has not
// ended); the caller runs them after letting go of the lock.
func (h *health) autoReadsLocked() []func() {
	if h.readHorizons == nil {
		return nil
	}
	var reads []func()
	now := h.now()
	for i := range h.auto {
		a := &h.auto[i]
		if !a.pending || a.reading {
			continue
		}
		if !now.Before(h.nodes[i].QuarantinedUntil) {
			a.pending = false
			continue
		}
		a.reading = true
		epoch := a.epoch
		reads = append(reads, func() {
			h.readHorizons(i, func(q time.Duration, conclusive bool) { h.settle(i, epoch, q, conclusive) })
		})
	}
	return reads
}

// settle takes a read's outcome for node i's quarantine of epoch: it lasts
// q from now; a conclusive read ends the reading.
func (h *health) settle(i int, epoch uint64, q time.Duration, conclusive bool) {
	h.mu.Lock()
	a := &h.auto[i]
	if a.epoch != epoch {
		h.mu.Unlock()
		return
	}
	a.reading = false
	a.pending = !conclusive
	n := &h.nodes[i]
	until := h.now().Add(q)
	n.QuarantinedUntil = until
	logs := h.recheckLocked()
	name := n.Name
	h.mu.Unlock()
	for _, l := range logs {
		l()
	}
	h.log.Info("backend's restart quarantine set from the lock horizons",
		"backend", name, "quarantine", q, "until", until, "conclusive", conclusive)
}

// counts tells whether node j's answers count now: up, neither refused nor
// quarantined.
func (h *health) counts(j int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := &h.nodes[j]
	return n.Up && n.Refused == "" && !h.now().Before(n.QuarantinedUntil)
}

func (h *health) quarantineName() any {
	if h.quarantine == QuarantineAuto {
		return "auto"
	}
	return h.quarantine
}

// readHorizons reads every other watched node's horizon for node i's
// quarantine, in one round, and calls done with its length and whether
// the read was conclusive (see the top of this file), from the last
// reply's goroutine. A node counts only while its answers count (up,
// neither refused nor quarantined): one seen down may have restarted and
// lost its horizon.
func (c *Cluster) readHorizons(i int, done func(time.Duration, bool)) {
	ask := func(j int) (Cmd, bool) {
		return Cmd{Kind: ReadHorizon, Key: HorizonKey}, j != i && c.horizons.watched[j].Load()
	}
	c.collectThen(OpHorizon, ask, anyVote, func(r *round, _ tally) {
		answered, longest := 0, time.Duration(0)
		for j := range r.calls {
			rep := r.reply(j)
			if !r.calls[j].asked || rep.Err != nil || !c.health.counts(j) {
				continue
			}
			answered++
			ttl := rep.TTL
			if ttl < 0 { // a horizon without expiry: nothing bounds it but the cap
				ttl = c.horizons.limit
			}
			longest = max(longest, ttl)
		}
		c.quarantineFrom(answered, longest, done)
	})
}

// quarantineFrom computes the quarantine from a read that answered
// answered nodes with longest the longest horizon: that and the proxy's
// own record, or the cap where the read is not conclusive and this proxy
// granted nothing; with the clock drift allowance on top.
func (c *Cluster) quarantineFrom(answered int, longest time.Duration, done func(time.Duration, bool)) {
	conclusive := answered >= len(c.nodes)-c.Quorum()+1
	own, has := c.horizons.ownRecord()
	if !conclusive && !has {
		done(c.horizons.limit, false) // the cap has its margin already
		return
	}
	q := max(longest, own)
	done(q+c.horizons.driftOf(q), conclusive)
}
