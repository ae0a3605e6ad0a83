package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// The lock horizon. Each watched node keeps one reserved key, HorizonKey,
// whose own ttl is at least the remaining life of every lock granted on
// that node. When a node restarts (and may have lost locks), the horizons
// of the other nodes say how long those locks can still be alive, which is
// how long QuarantineAuto keeps the restarted node out of every vote.
//
// Keeping it costs almost nothing per lock: the proxy remembers, per node,
// until when (on its monotonic clock) the node's horizon is known to last.
// A node's yes to anything that leaves a key with an expiry (see leftTTL)
// counts only once that horizon covers the expiry; one that outlives it
// first raises the horizon, with slack (raiseTTL), so a stream of similar
// locks raises it rarely. The check sits where every round receives a
// node's reply (nodeCall.Receive), so every way a lock's expiry can grow
// passes through it: acquire, multi-key, owner holds, extends, renewals,
// restores, PEXPIRE, force SET, and scripts (Reply.TTL).

// ReservedPrefix starts every key, value and channel the proxy keeps on
// the backends for itself: the horizon, fence counters, hold counts,
// wait marks, semaphore markers, release notices. A client that could
// write them would break FENCE, OWNER, PERMITS and WAIT for everyone: the
// command table, the script check, the pub/sub hub and client-side
// caching all keep clients out of it.
const ReservedPrefix = "redlockd:"

// HorizonKey is where each node keeps its lock horizon (db 0). Clients
// cannot write it: the command table refuses the redlockd: namespace.
const HorizonKey = ReservedPrefix + "horizon"

// ErrHorizon is matched by the error that replaces a node's yes when its
// horizon could not be raised to cover what the yes granted: the yes does
// not count.
var ErrHorizon = errors.New("quorum: lock horizon not raised")

// horizonFloor is the least slack a raise adds: a stream of short locks
// then raises each node's horizon about once a second at most.
const horizonFloor = time.Second

// recordStep is the grain of the proxy's own record of the latest expiry
// it granted (horizons.granted): at most that much too long.
const recordStep = int64(100 * time.Millisecond)

// horizons is what the Cluster knows of every node's horizon.
type horizons struct {
	nodes []Node
	now   func() time.Time
	// atIsNow: a reply's At is a reading of now's clock (the real one),
	// taken after the node ran the command.
	atIsNow bool
	base    time.Time // origin of the offsets below
	drift   float64
	timeout time.Duration
	maxTTL  time.Duration // the longest expiry a yes may leave
	limit   time.Duration // the largest slack-padded raise (MaxTTL + horizonFloor)
	// ceiling is the longest horizon there can be: no raise asks more
	// (limit, or what the drift allowance adds to a MaxTTL lock), and a
	// longer one read from a node is taken as ceiling.
	ceiling time.Duration
	log     *slog.Logger
	// clamped is, per node, whether a horizon read there was found longer
	// than ceiling (logged once).
	clamped []atomic.Bool

	// known is, per node, the offset from base until which its horizon is
	// known to last; read on every covered reply without a lock.
	known []atomic.Int64
	// watched is false for a node that cannot identify its server: it is
	// never quarantined, so it keeps no horizon.
	watched []atomic.Bool
	// granted is the offset of the latest expiry this proxy asked a node
	// to cover, 0 before the first: the proxy's own record of its locks.
	granted atomic.Int64

	mu       sync.Mutex
	gen      []uint64        // per node, moved by each restart seen
	inflight []bool          // per node, a raise is on its way
	waiting  [][]horizonWait // per node, covers waiting for a raise
}

// horizonWait is one reply waiting until its node's horizon reaches need.
type horizonWait struct {
	need int64
	done func(error)
}

func newHorizons(nodes []Node, cfg Config) *horizons {
	h := &horizons{
		nodes: nodes, now: cfg.Now, base: cfg.Now(), drift: cfg.DriftFactor,
		timeout: cfg.NodeTimeout, limit: horizonLimit(cfg), maxTTL: horizonLimit(cfg) - horizonFloor,
		log: cfg.Logger, clamped: make([]atomic.Bool, len(nodes)),
		known: make([]atomic.Int64, len(nodes)), watched: make([]atomic.Bool, len(nodes)),
		gen: make([]uint64, len(nodes)), inflight: make([]bool, len(nodes)),
		waiting: make([][]horizonWait, len(nodes)),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.ceiling = max(h.limit, covering(h.maxTTL, h.drift))
	for i := range h.watched {
		h.watched[i].Store(true)
	}
	return h
}

// horizonLimit is the longest raise that slack may ask for, and the auto
// quarantine's cap: MaxTTL (its default where unset) plus horizonFloor.
func horizonLimit(cfg Config) time.Duration {
	if cfg.MaxTTL <= 0 {
		return defaultMaxTTL + horizonFloor
	}
	return cfg.MaxTTL + horizonFloor
}

func (h *horizons) offset(t time.Time) int64 { return max(int64(t.Sub(h.base)), 1) }

// covers is the fast path, taken by almost every reply: whether node i's
// horizon is known to cover a key living ttl from at, and if not, the
// offset it must reach. at is when the reply was read (Reply.At), which
// is after the node set the key; or zero: now.
func (h *horizons) covers(i int, ttl time.Duration, at time.Time) (int64, bool) {
	if ttl <= 0 || !h.watched[i].Load() {
		return 0, true
	}
	if at.IsZero() || !h.atIsNow {
		at = h.now()
	}
	need := h.offset(at.Add(ttl))
	h.record(need)
	return need, h.known[i].Load() >= need
}

// wait queues done until node i's horizon reaches need, raising it. A
// need past MaxTTL from now is never covered: the horizon is not raised
// past its ceiling, so that yes does not count.
func (h *horizons) wait(i int, need int64, done func(error)) {
	if time.Duration(need)-h.now().Sub(h.base) > h.maxTTL {
		done(fmt.Errorf("%w: the expiry is beyond max-ttl (%v)", ErrHorizon, h.maxTTL))
		return
	}
	h.mu.Lock()
	if h.known[i].Load() >= need {
		h.mu.Unlock()
		done(nil)
		return
	}
	h.waiting[i] = append(h.waiting[i], horizonWait{need, done})
	send := h.startLocked(i)
	h.mu.Unlock()
	send()
}

// record remembers need as the latest expiry this proxy granted, rounded
// up to the next recordStep: a bound that may only be too long, so that
// the replies of every round (which nearly always extend it) write the
// shared record about once per step rather than once each.
func (h *horizons) record(need int64) {
	need = (need + recordStep - 1) / recordStep * recordStep
	for {
		cur := h.granted.Load()
		if cur >= need || h.granted.CompareAndSwap(cur, need) {
			return
		}
	}
}

// startLocked prepares a raise that covers every waiter of node i, unless
// one is on its way (its reply starts the next); the caller sends it after
// letting go of the lock.
func (h *horizons) startLocked(i int) func() {
	if h.inflight[i] || len(h.waiting[i]) == 0 {
		return func() {}
	}
	sent := h.now()
	past := h.dropPastLocked(i, h.offset(sent))
	if len(h.waiting[i]) == 0 {
		return past
	}
	h.inflight[i] = true
	var need int64
	for _, w := range h.waiting[i] {
		need = max(need, w.need)
	}
	ttl := h.raiseTTL(time.Duration(need) - sent.Sub(h.base))
	reach := h.offset(sent.Add(ttl - drift(ttl, h.drift)))
	gen := h.gen[i]
	cmd := Cmd{Kind: RaiseHorizon, Key: HorizonKey, TTL: ttl}
	return func() {
		past()
		h.nodes[i].Do(sent.Add(h.timeout), cmd, ReceiverFunc(func(rep Reply) {
			// The horizon may be longer than asked (another proxy raised
			// it): it lasts at least its reported ttl from the sending.
			if rep.Err == nil && rep.TTL > ttl {
				reach = max(reach, h.offset(sent.Add(rep.TTL-drift(rep.TTL, h.drift))))
			}
			h.raised(i, gen, reach, rep)
		}))
	}
}

// dropPastLocked takes the waiters of node i whose key has expired by
// now (an offset) out of the queue: there is nothing left for a horizon to
// cover (a grant whose ttl ran out has no validity either). It returns what
// tells them so, for the caller to run after letting go of the lock.
func (h *horizons) dropPastLocked(i int, now int64) func() {
	var past []func(error)
	keep := h.waiting[i][:0]
	for _, w := range h.waiting[i] {
		if w.need <= now {
			past = append(past, w.done)
			continue
		}
		keep = append(keep, w)
	}
	h.waiting[i] = keep
	return func() {
		for _, done := range past {
			done(nil)
		}
	}
}

// raiseTTL is the ttl a raise asks for to cover a key living ttl: twice
// that (at least horizonFloor more), capped at limit, and never so little
// that the clock drift allowance eats into ttl.
func (h *horizons) raiseTTL(ttl time.Duration) time.Duration {
	r := min(max(2*ttl, ttl+horizonFloor), h.limit)
	return min(max(r, covering(ttl, h.drift)), h.ceiling)
}

// clampRead is the horizon ttl read on node i as the quarantine takes it:
// one without expiry, or longer than the ceiling (written by hand, or by
// a proxy with a larger max-ttl), is the ceiling; the first such read of
// each node is logged.
func (h *horizons) clampRead(i int, ttl time.Duration) time.Duration {
	if ttl >= 0 && ttl <= h.ceiling {
		return ttl
	}
	if h.clamped[i].CompareAndSwap(false, true) {
		h.log.Warn("backend's lock horizon is longer than max-ttl allows: taken as max-ttl plus its slack",
			"backend", h.nodes[i].Name(), "horizon", ttl, "taken_as", h.ceiling)
	}
	return h.ceiling
}

// genOf is node i's restart generation: moved by each restart seen.
func (h *horizons) genOf(i int) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen[i]
}

// raised takes a raise's reply: the horizon now reaches reach unless the
// raise failed or the node restarted meanwhile (gen moved: the raise may
// have reached the server that is gone). Waiters it covers go on; those it
// was for fail when it did not land; the rest start the next raise.
func (h *horizons) raised(i int, gen uint64, reach int64, rep Reply) {
	err := rep.Err
	h.mu.Lock()
	if err == nil && h.gen[i] != gen {
		err = errors.New("the node restarted")
	}
	if err == nil && h.known[i].Load() < reach {
		h.known[i].Store(reach)
	}
	h.inflight[i] = false
	known := h.known[i].Load()
	var ready []func(error)
	var rest []horizonWait
	for _, w := range h.waiting[i] {
		switch {
		case w.need <= known:
			ready = append(ready, w.done)
		case err != nil && w.need <= reach:
			ready = append(ready, failWith(w.done, err))
		default:
			rest = append(rest, w)
		}
	}
	h.waiting[i] = rest
	send := h.startLocked(i)
	h.mu.Unlock()
	for _, d := range ready {
		d(nil)
	}
	send()
}

// failWith is done told of err, whatever it is called with.
func failWith(done func(error), err error) func(error) {
	return func(error) { done(fmt.Errorf("%w: %v", ErrHorizon, err)) }
}

// reset forgets node i's horizon: its server restarted, and the new one
// holds none.
func (h *horizons) reset(i int) {
	h.mu.Lock()
	h.gen[i]++
	h.known[i].Store(0)
	h.mu.Unlock()
}

// ownRecord is how long the latest expiry this proxy granted is still
// ahead, and whether it granted anything at all.
func (h *horizons) ownRecord() (time.Duration, bool) {
	g := h.granted.Load()
	if g == 0 {
		return 0, false
	}
	return max(time.Duration(g)-h.now().Sub(h.base), 0), true
}

// leftTTL is the longest expiry a yes reply to a command of kind, asked
// with ttl, left on its node, for the kinds that store or extend a lock
// (Reply.TTL where the node reports it); 0 for the others (releases,
// reads, wait marks, fence counters).
func leftTTL(kind CmdKind, ttl time.Duration, rep *Reply) time.Duration {
	switch {
	case rep.Err != nil:
		return 0
	case kind == Eval: // a script's reply is its Value; TTL is what it left
		return rep.TTL
	case !rep.OK:
		return 0
	case kind.has(factLeavesTTL):
		return ttl
	case kind.has(factLeavesReplyTTL):
		return rep.TTL
	}
	return 0
}
