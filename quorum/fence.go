package quorum

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
)

// Fencing tokens (LOCK … FENCE).
//
// Each node keeps a counter per key at FenceKey(key). After the lock is
// acquired, Fence reads the counter on every node (waiting for all answers,
// each bounded by the node timeout; at least a majority must answer), picks
//
//	fence = max(largest counter read + 1, wall clock in microseconds)
//
// and raises the counter on every node to it with an atomic
// set-if-greater, replying only once a majority stored exactly that value.
// The lock must still be valid after both rounds, or the fence is not
// handed out.
//
// Why it increases strictly: a fence F handed out earlier was stored on a
// majority W before its lock's validity ended, and the next lock on the key
// is granted only after that validity ended, so its read happens after F
// was stored. A read reaching a majority R meets W in at least one node; if
// that node kept its data, the read sees >= F and the new fence is > F.
// The clock floor covers the rest: counters that expired (they live
// FenceTTL, refreshed on every use, so a key unused that long starts again
// from the clock) and a node of W that lost its data (a restart without
// persistence) while the other nodes of W are not in R. Since every fence
// is at most "previous + 1" above the clock reading of the proxy that made
// it, and a lock round takes far longer than a microsecond, each fence is
// close to its proxy's clock, and the next proxy's clock has moved past it.
//
// When it is not monotonic: if the clock floor is needed (expired counter,
// or data lost on a node that was the only one of W the read reached) and
// the new proxy's wall clock is behind the clock of the proxy that made F by
// more than the time between the two acquisitions (a clock stepped back, or
// proxies whose clocks disagree). Losing the data of a majority at once
// defeats both the counters and the lock itself. The restart quarantine,
// when on, keeps a restarted node out of the read, which removes the
// data-loss case. Counters are Lua numbers on Redis: exact up to 2^53
// (microseconds until about the year 2255).
//
// A counter that is not a decimal integer in [0, MaxFence] (written by
// hand on a backend, or corrupted) carries no fence this proxy could have
// handed out, and a number read from it could send the next fence
// anywhere: far ahead, beyond what Lua compares exactly, or back once it
// is gone. Its node votes as an error in the read (ErrBadFence), so a
// majority of sound nodes still fences, and the raise overwrites it like
// the counter of a node that lost its data. Clients cannot write these
// keys: the command table refuses the redlockd: namespace.

// FenceTTL is how long a fencing counter outlives its last use. The proxy
// never stores a key without an expiry; past this the clock floor takes over.
const FenceTTL = 7 * 24 * time.Hour

// MaxFence is the largest counter a node may hold: Redis compares counters
// as Lua numbers, which are exact up to 2^53.
const MaxFence = 1 << 53

// ErrBadFence reports a node whose counter is not a decimal integer in
// [0, MaxFence]. Fencers return it (wrapped) for such a counter.
var ErrBadFence = errors.New("quorum: malformed fence counter")

// ErrFenceOvertaken reports that a node already stored a larger fence than
// the one just computed: another holder fenced the key meanwhile, so this
// lock can no longer be trusted.
var ErrFenceOvertaken = errors.New("quorum: fence overtaken by a later holder")

// FenceKey is where the nodes keep key's fencing counter.
func FenceKey(key string) string { return slot.Key("redlockd:fence:", key) }

// Fence hands out the next fencing token for l, a lock just acquired, and
// takes the time it spent off l.Validity (and sets l.Fence). It returns
// ErrNotAcquired when the validity ran out meanwhile, ErrFenceOvertaken,
// or a *NoQuorumError. On error the caller still holds (and must release)
// the lock. It is FenceAsync, waited for: a ctx that ends stops the wait,
// not the rounds.
func (c *Cluster) Fence(ctx context.Context, l *Lock) (int64, error) {
	fenced, err := orLeft(awaitThen(ctx, func(then func(Lock, error)) { c.FenceAsync(*l, then) }))
	if err != nil {
		return 0, err
	}
	*l = fenced
	return fenced.Fence, nil
}

// FenceAsync is Fence that does not wait: done gets l with its Fence set
// and its validity less the time spent, or the error, once, from the
// goroutine of the reply that decided it or before FenceAsync returns.
// done must not block.
func (c *Cluster) FenceAsync(l Lock, done func(Lock, error)) {
	fr := &fenceRun{c: c, l: l, done: done, report: c.begin(OpFence), t0: c.cfg.Now(), tries: 1}
	if IsSharedToken(l.Token) {
		fr.tries = sharedFenceTries
	}
	fr.read()
}

// fenceRun is one Fence in flight: a reading and a raising of l's
// fencing counters, taken again while readers overtake a reader's.
type fenceRun struct {
	c      *Cluster
	l      Lock
	done   func(Lock, error)
	report func(err error, validity, ttl time.Duration)
	t0     time.Time
	tries  int // readings left, this one included
}

func (fr *fenceRun) read() {
	fr.c.nextAboveThen(OpFence, Cmd{Kind: ReadFence, Key: fenceKeyOf(&fr.l)}, fr.raise)
}

func (fr *fenceRun) raise(f int64, err error) {
	if err != nil {
		fr.end(err)
		return
	}
	fr.l.Fence = f
	fr.c.raiseFencesThen(fenceKeyOf(&fr.l), f, fr.raised)
}

// raised ends the fence, or reads again for a reader that another reader
// overtook (see sharedFenceTries). The validity counts every reading.
func (fr *fenceRun) raised(err error) {
	if fr.tries--; errors.Is(err, ErrFenceOvertaken) && fr.tries > 0 {
		fr.read()
		return
	}
	if err == nil {
		if fr.l.Validity -= fr.c.cfg.Now().Sub(fr.t0); fr.l.Validity <= 0 {
			err = ErrNotAcquired
		}
	}
	fr.end(err)
}

func (fr *fenceRun) end(err error) {
	fr.report(err, 0, 0)
	if err != nil {
		fr.l.Fence = 0
	}
	fr.done(fr.l, err)
}

// nextAboveThen reads a counter (cmd: its N on each node) on every node
// and gives then the next value above the largest any node gave, and at
// least the wall clock in microseconds: a node that lost the counter, in
// a majority that misses every node holding the latest value, still gives
// a later one while the proxies' clocks agree. Fences and fair tickets
// both are such counters.
func (c *Cluster) nextAboveThen(op string, cmd Cmd, then func(int64, error)) {
	c.collectThen(op, same(cmd), anyVote, func(r *round, t tally) {
		if err := c.heard(&t); err != nil {
			then(0, err)
			return
		}
		var top int64
		for i := range r.calls {
			if rep := r.reply(i); rep.Err == nil {
				top = max(top, rep.N)
			}
		}
		then(max(top+1, c.cfg.Now().UnixMicro()), nil)
	})
}

// raiseFencesThen raises the counter fk to f on every node and gives then
// nil once a majority stored exactly f, ErrFenceOvertaken where a node
// held more.
func (c *Cluster) raiseFencesThen(fk string, f int64, then func(error)) {
	c.collectThen(OpFence, same(Cmd{Kind: RaiseFence, Key: fk, N: f, TTL: FenceTTL}), func(rep Reply) bool { return rep.N == f }, func(r *round, t tally) {
		if slices.ContainsFunc(r.calls, func(nc nodeCall) bool { return nc.rep.Err == nil && nc.rep.N > f }) {
			then(ErrFenceOvertaken)
			return
		}
		if t.yes >= c.Quorum() {
			then(nil)
			return
		}
		then(c.noQuorum(&t))
	})
}
