package quorum

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lock is a lock held on a majority of nodes.
type Lock struct {
	Key   string
	Token string
	// Validity is how long, from the moment Acquire returned, the lock can
	// be trusted: ttl minus the time spent acquiring minus the drift.
	Validity time.Duration
	// Fence is the lock's fencing token once Fence handed one out; 0:
	// none.
	Fence int64
}

// Acquire makes one Redlock round: SET key token NX PX ttl on every node at
// once. It returns the lock when a majority granted it within its validity.
// Otherwise it releases the token wherever the round may have stored it
// (a caller's cancellation cannot cut that short) and returns
// ErrNotAcquired (contention) or a *NoQuorumError (too few nodes answered).
// When ctx ends before the round is decided it returns ctx's error; the
// round runs to its end, and a grant it makes after that is released as a
// failed round's is. With Wait, it is a blocking acquire (see
// acquireWait).
func (c *Cluster) Acquire(ctx context.Context, key, token string, ttl time.Duration, opts ...Option) (Lock, error) {
	if o := optionsOf(opts); o.wait > 0 {
		return c.acquireWait(ctx, key, token, ttl, o)
	}
	return c.acquireCmd(ctx, Cmd{Kind: SetNX, Key: key, Token: token, TTL: ttl})
}

// Option changes how an acquire of any kind runs.
type Option struct {
	wait  time.Duration
	tried error
}

// Wait makes an acquire blocking: its rounds are retried until one is
// granted, wait has passed, or ctx is done, and the last round's result is
// returned. Without it (or with wait <= 0) an acquire is one round.
func Wait(wait time.Duration) Option { return Option{wait: wait} }

// Tried tells a blocking acquire (Wait) that its caller made the first
// round itself, in its asynchronous form (AcquireAsync, LockOwnerAsync,
// AcquirePermitAsync), and that it failed with err (ErrNotAcquired,
// ErrQueued, a *NoQuorumError): the wait goes on from where that round
// left it (see waitRounds). A fair waiter's wait begins with its ticket
// either way.
func Tried(err error) Option { return Option{tried: err} }

// optionsOf is what opts ask for together: of each, the last one given
// that sets it (a Wait of 0 does not undo an earlier Wait).
func optionsOf(opts []Option) Option {
	var o Option
	for _, x := range opts {
		if x.wait != 0 {
			o.wait = x.wait
		}
		if x.tried != nil {
			o.tried = x.tried
		}
	}
	return o
}

// AcquireAsync is Acquire that does not wait: done gets its outcome, once,
// after any cleanup of a failed round, from the goroutine of the reply
// that decided it or before AcquireAsync returns. done must not block.
// The round cannot be cancelled once started. It is reported to rp in one
// RoundDone, as Reporter says, for a caller that reports the acquire in
// one with its own work; nil: to the Cluster's Observer.
//
// kind is the lock's: SetNX for a plain lock (Acquire), AcquireShared for
// a reader (AcquireShared; token from NewSharedToken), FairAcquire for a
// fair lock's try where nobody is queued (AcquireFair without Wait). Any
// other kind is ErrAsyncKind.
func (c *Cluster) AcquireAsync(rp Reporter, kind CmdKind, key, token string, ttl time.Duration, done func(Lock, error)) {
	if kind != SetNX && kind != AcquireShared && kind != FairAcquire {
		done(Lock{}, ErrAsyncKind)
		return
	}
	if kind == AcquireShared {
		// As a waiting reader that gets in does (acquireSharedWait): the
		// key's next waiter, a reader queued behind a writer that left,
		// may get in too.
		inner := done
		done = func(l Lock, err error) {
			if err == nil {
				c.wake.notify(c.db, key)
			}
			inner(l, err)
		}
	}
	c.grantAsync(rp, c.acquireGrant(Cmd{Kind: kind, Key: key, Token: token, TTL: ttl}), done)
}

// ErrAsyncKind is AcquireAsync's answer to a kind that is not a lock's.
var ErrAsyncKind = errors.New("quorum: AcquireAsync takes SetNX, AcquireShared or FairAcquire")

// acquireGrant declares the round of an acquire of one lock, cmd (of
// cmd.Key and cmd.Token for cmd.TTL; the kind says what each node is
// asked: a plain SET NX, a reader, a permit's slot, a fair try): granted as
// soon as a majority stored it within the validity, refused (no
// majority) as contention, and undone by releasing the token wherever the
// node did not refuse it.
func (c *Cluster) acquireGrant(cmd Cmd) grant {
	return grant{
		op: OpAcquire, ttl: cmd.TTL, early: true, failed: ErrNotAcquired,
		cmd: cmd, kept: refused,
	}
}

// acquireCmd is one acquire round of cmd (acquireGrant), waited for, as
// an operation of its own, until ctx ends. Node calls outlive a
// cancellation (a client that hangs up mid-round must not leave the round
// half done): a caller that is already gone starts no round at all, and
// one that leaves mid-round leaves the round to run to its end, its grant,
// if it makes one, taken back as a failed round's is (takeBack).
func (c *Cluster) acquireCmd(ctx context.Context, cmd Cmd) (Lock, error) {
	if err := ctx.Err(); err != nil {
		c.roundDone(OpAcquire, nil, err, 0, cmd.TTL)
		return Lock{}, err
	}
	o, err := await(ctx, func(ch chan lockOut) {
		c.grantPooled(nil, c.acquireGrant(cmd), nil, func(o lockOut) { give(ch, o, takeBack) })
	})
	if err != nil {
		return Lock{}, err
	}
	return o.l, o.err
}

// lockOut is a pooled grant's outcome as a caller waits for it
// (acquireCmd): the lock or the error, and the record of the round, which
// takeBack needs where the caller left before it came; valid during the
// call that hands it on.
type lockOut struct {
	l   Lock
	err error
	gr  *grantRun
}

// takeBack undoes the grant of a pooled round whose caller stopped
// waiting before it came, as a failed round's grants are undone (see
// undoAfterAll). It runs within the round's outcome, which holds the
// round until then; one hold more keeps the record from being recycled
// until the undo is done.
func takeBack(o lockOut) {
	if o.err != nil {
		return // a failed round undid itself
	}
	r := &o.gr.round
	r.refs.Add(1)
	o.gr.c.undoAfterAll(&o.gr.g, r, r.unref)
}

// grantLock runs g, the round of a lock of key for token, and returns the
// lock it granted. It stops waiting when ctx ends (a caller already gone
// starts nothing): the round runs to its end, and a grant it makes after
// that is undone as a failed round's is (see grantRound).
func (c *Cluster) grantLock(ctx context.Context, key, token string, g grant) (Lock, error) {
	v, _, err := c.grantRound(ctx, g)
	if err != nil {
		return Lock{}, err
	}
	return Lock{Key: key, Token: token, Validity: v}, nil
}

// grantAsync runs g, reported to rp (nil: the Cluster's Observer), and
// gives done its outcome as the lock of g.cmd's key and token, valid for
// what the round left. The outcome is values, so the round is pooled
// (see round.hold): it allocates no record of its own.
func (c *Cluster) grantAsync(rp Reporter, g grant, done func(Lock, error)) {
	c.grantPooled(rp, g, done, nil)
}

// grantPooled is grantAsync whose outcome goes to done, or, where done is
// nil, to waited with the round's record (see lockOut).
func (c *Cluster) grantPooled(rp Reporter, g grant, done func(Lock, error), waited func(lockOut)) {
	if g.ttl <= 0 {
		if rp != nil {
			rp.RoundDone(&Report{Op: g.op, Outcome: Outcome(ErrInvalidTTL), TTL: g.ttl})
		} else {
			c.roundDone(g.op, nil, ErrInvalidTTL, 0, g.ttl)
		}
		if done == nil {
			waited(lockOut{err: ErrInvalidTTL})
			return
		}
		done(Lock{}, ErrInvalidTTL)
		return
	}
	gr := grantPool.Get().(*grantRun)
	gr.acquired, gr.waited, gr.reporter = done, waited, rp
	c.startGrant(gr, g, true)
}

// acquired is the outcome of g's round r as a lock, reported (see
// roundDone): a plain SET NX refused where fair waiters are queued is
// ErrQueued.
func (c *Cluster) acquired(r *round, g *grant, v time.Duration, err error) (Lock, error) {
	var l Lock
	cmd := &g.cmd
	if err == nil {
		l = Lock{Key: cmd.Key, Token: cmd.Token, Validity: v}
	} else if err == ErrNotAcquired && cmd.Kind == SetNX && r.sawQueue() {
		err = ErrQueued
	}
	c.roundDone(g.op, r, err, l.Validity, g.ttl)
	return l, err
}

// refused is a node that answered an acquire with "no": it never stored
// this round's SET, and what it holds (possibly the same token, from an
// earlier acquisition that is still valid) is not the round's to delete.
func refused(rep Reply) bool { return !rep.OK }

// undoGrant is the undo of a failed acquire-like round: a release of token
// on every node except those whose reply keep says to leave alone. A node
// that did not answer the round may still store its grant after the
// release, so even a "not held" there is checked again later.
func (c *Cluster) undoGrant(op, key, token string, ttl time.Duration, keep voter) func(*round, func()) {
	return func(g *round, done func()) {
		landed := func(i int) bool { return g.landed(i, keep) }
		c.releaseThen(op, key, token, ttl, false, landed, func(r *round, _ tally) {
			r.eachMayLand(g, func(i int) {
				if !r.reply(i).OK {
					c.pending.add(i, c.db, key, token, ttl, true)
				}
			})
			done()
		})
	}
}

// unanswered is a reply that never came: not a node's answer, nor a veto
// of one.
func unanswered(rep Reply) bool {
	return rep.Err != nil && !errors.Is(rep.Err, ErrQuarantined) && !errors.Is(rep.Err, ErrRefused)
}

// eachMayLand calls f with every node that undo round r asked and that
// answered it, where the round g that r undoes never had its answer:
// whatever r found there, g's write may still land after it, so the node
// is to be checked again later. Every reply of both rounds is in.
func (r *round) eachMayLand(g *round, f func(i int)) {
	for i := range r.calls {
		if r.calls[i].asked && r.reply(i).Err == nil && unanswered(g.reply(i)) {
			f(i)
		}
	}
}

// releaseThen is a compare-and-delete of key=token on every node that
// only names (nil: all); then gets the round with every reply in (a round
// of no node when only named none). A node that does not answer gets the
// release again later (see retrier). notify: a user's release, announced
// to waiters.
func (c *Cluster) releaseThen(op, key, token string, ttl time.Duration, notify bool, only func(int) bool, then func(*round, tally)) {
	c.startRelease(&releaseRun{then: then}, op, key, token, ttl, notify, only, false)
}

// releaseRun is a release's round in flight with what its outcome needs,
// in one allocation: its steps are methods, not closures.
type releaseRun struct {
	round
	cmd Cmd
	ttl time.Duration // how long a pending retry of it is kept
	// then gets the round with every reply in; or, where it is nil, done
	// gets ReleaseAsync's outcome, reported by roundDone.
	then func(*round, tally)
	done func(bool, error)
}

// releasePool holds the release records of ReleaseAsync, whose outcome
// hands the round to nobody.
var releasePool = sync.Pool{New: func() any { return new(releaseRun) }}

// startRelease launches rr's round: a compare-and-delete of key=token on
// every node that only names (nil: all). pooled: rr came from
// releasePool, and goes back to it once nothing holds it.
func (c *Cluster) startRelease(rr *releaseRun, op, key, token string, ttl time.Duration, notify bool, only func(int) bool, pooled bool) {
	rr.cmd = Cmd{Kind: cmdsOf(token).release, Key: key, Token: token, Notify: notify}
	rr.ttl = ttl
	r := &rr.round
	r.init(c, op, okVote, 0)
	r.run, r.same = rr, &rr.cmd
	r.hold(pooled)
	var ask asker
	if only != nil {
		ask = func(i int) (Cmd, bool) { return rr.cmd, only(i) }
	}
	r.launch(ask)
}

// ready implements runner: every reply is in (a release has no early
// threshold). A node that did not answer gets the release again later;
// a user's release that deleted anything wakes the key's waiters.
func (rr *releaseRun) ready(t tally) {
	r, c := &rr.round, rr.c
	key, token, ttl := rr.cmd.Key, rr.cmd.Token, rr.ttl
	r.eachUnanswered(func(i int) { c.pending.add(i, c.db, key, token, ttl, false) })
	if rr.cmd.Notify && t.yes > 0 {
		c.wake.notify(c.db, key)
	}
	if rr.then != nil {
		rr.then(r, t)
	} else {
		released, err := c.majority(&t)
		c.roundDone(OpRelease, r, boolOutcome(released, err), 0, 0)
		rr.done(released, err)
	}
	r.unref()
}

// failed implements runner; a release never leaves its decision to it.
func (rr *releaseRun) failed(tally) {}

// recycle implements runner.
func (rr *releaseRun) recycle() {
	rr.round.reuse()
	rr.cmd, rr.ttl, rr.then, rr.done = Cmd{}, 0, nil, nil
	releasePool.Put(rr)
}

// acquireWait retries Acquire until it succeeds, wait has passed, or ctx is
// done, pausing a random delay between rounds so that competing clients do
// not split the votes forever. A release of key (through this Cluster, or
// announced by a node) cuts the pause short for the oldest waiter of the
// key. A NoQuorumError is retried like contention while time remains; the
// last round's error is returned.
//
// The first round is a plain Acquire, so an uncontended lock costs nothing
// more. Every later round marks the key as waited for on the nodes, and
// the first of them runs at once, before any pause: a release that landed
// between the first round and the mark announced nothing, but the marked
// round then finds the key free.
//
// A round refused because fair waiters are queued for key (LOCK … FAIR)
// makes this waiter join their queue, at its end, for the rest of its wait.
func (c *Cluster) acquireWait(ctx context.Context, key, token string, ttl time.Duration, o Option) (Lock, error) {
	deadline := c.cfg.Now().Add(o.wait)
	return waitRounds(c, ctx, key, deadline, blocking[Lock]{
		// A marked SET NX marks key as waited for where it is held, in
		// its own step, and fails with ErrQueued where fair waiters are
		// queued for key.
		try: func(mark time.Duration) (Lock, error) {
			return c.acquireCmd(ctx, Cmd{Kind: SetNX, Key: key, Token: token, TTL: ttl, Add: mark})
		},
		tried: o.tried,
		marks: true,
		queued: func() blocking[Lock] {
			return c.fairWait(ctx, key, token, ttl, deadline)
		},
		// A writer's rounds marked the key to keep new readers out: its
		// client is gone, so the readers need not wait for the mark.
		gaveUp: func(marked bool) {
			if marked && ctx.Err() != nil {
				c.dropWriterMark(key)
			}
		},
	})
}

// blocking is one kind of blocking acquire (a plain lock, a permit, a
// reader, an owner's hold, a fair waiter's turn), as waitRounds runs it.
type blocking[T any] struct {
	// try is one round; mark > 0 also marks the key as waited for that
	// long (its release is then announced).
	try func(mark time.Duration) (T, error)
	// tried is the refusal of a first round the caller made (see Tried);
	// nil: the wait makes its first round.
	tried error
	// marks: the rounds after the first mark the key, and the first of
	// them runs at once; without it every round gets mark 0.
	marks bool
	// final reports a refusal no later round can change (besides
	// ErrInvalidTTL); nil: none.
	final func(error) bool
	// queued is the wait that takes over, for the same waiter and
	// deadline, after a round refused with ErrQueued (fair waiters are
	// queued for the key); nil: such a round is contention.
	queued func() blocking[T]
	// handOn: a wake this waiter's round could not use goes on to the
	// key's next local waiter (see wakeRegistry.handOn).
	handOn bool
	// gaveUp runs when the wait ends without a lock (its deadline passed
	// or ctx ended); marked reports that a round marked the key. nil:
	// nothing to do.
	gaveUp func(marked bool)
}

// waitRounds is the wait of every blocking acquire: it runs b's rounds
// until one is granted or refused for good, deadline has passed, or ctx is
// done, and returns the last round's result. The waiter joins the key's
// wake registry before the first round, so that a release during it is
// not missed. With b.marks, the first round marks nothing, so an
// uncontended lock costs nothing more; the second runs at once and marks
// the key (a release that landed between the two announced nothing, but
// the marked round finds the key free). Each pause is cut short by a
// release of the key.
//
// A wait whose first round its caller made (b.tried) goes on as after
// that round: into the fair queue after ErrQueued, else with its next
// round at once, marked where b.marks. It joined the wake registry only
// after that first round, so the release it may have missed meanwhile is
// found by that round, never left to a pause.
func waitRounds[T any](c *Cluster, ctx context.Context, key string, deadline time.Time, b blocking[T]) (T, error) {
	w := c.wake.join(c.db, key)
	var mark time.Duration
	switch err := b.tried; {
	case err == ErrQueued && b.queued != nil:
		b = b.queued()
	case err != nil && b.marks:
		mark = c.markTTL(deadline)
	}
	for {
		v, err := b.try(mark)
		if err == nil || errors.Is(err, ErrInvalidTTL) || (b.final != nil && b.final(err)) {
			c.wake.leave(w, err == nil)
			return v, err
		}
		if err == ErrQueued && b.queued != nil && ctx.Err() == nil {
			b, mark = b.queued(), 0
			continue
		}
		if b.marks {
			first := mark == 0
			if mark = c.markTTL(deadline); first && mark > 0 && ctx.Err() == nil {
				continue
			}
		}
		if b.handOn && w.woken {
			c.wake.handOn(w)
		}
		if !c.pauseForRetry(ctx, w, deadline) {
			c.wake.leave(w, false)
			if b.gaveUp != nil {
				b.gaveUp(mark > 0)
			}
			var zero T
			return zero, err
		}
	}
}

// Extend resets the lock's ttl on every node that still holds token. It
// succeeds when a majority did so and the new validity is positive. A failed
// extend changes nothing the caller was promised: the token stays where it
// is, so the lock stands until the validity reported before (deleting it
// would hand the key to another client while that validity still runs).
func (c *Cluster) Extend(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, ttl) }()
	v, _, err = c.grantRound(ctx, grant{op: OpExtend, ttl: ttl, failed: ErrNotHeld,
		cmd: Cmd{Kind: CompareAndExtend, Key: key, Token: token, TTL: ttl}})
	return v, err
}

// Release deletes key on every node where it still holds token. It reports
// true when a majority held it; a *NoQuorumError when too few answered.
// Like every release it is sent, and runs to its end, whatever ctx says
// (an unlock sent just before its client hangs up still lands, and a node
// that did not answer gets it again later); only the wait for its
// outcome ends with ctx, with ctx's error.
func (c *Cluster) Release(ctx context.Context, key, token string) (bool, error) {
	return orLeft(awaitSentThen(ctx, func(then func(bool, error)) { c.ReleaseAsync(nil, key, token, then) }))
}

// ReleaseAsync is Release that does not wait: done gets its outcome, once,
// and rp (nil: the Cluster's Observer) its report, as AcquireAsync's do.
func (c *Cluster) ReleaseAsync(rp Reporter, key, token string, done func(bool, error)) {
	rr := releasePool.Get().(*releaseRun)
	rr.done, rr.reporter = done, rp
	c.startRelease(rr, OpRelease, key, token, 0, true, nil, true)
}
