package quorum

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Fair locks (LOCK … WAIT ms FAIR) grant a key's waiters in the order they
// started waiting, through any proxy. The order lives on the nodes, each
// of which keeps a queue per key (backend.FairQueueKey): tokens ordered by a
// ticket, each entry with an expiry of its own that its waiter refreshes
// with every round.
//
//   - A waiter first takes a ticket: it reads the largest ticket queued on
//     every node (FairTail; a majority must answer) and picks one above
//     it, and at least the wall clock in microseconds.
//   - Each round (FairAcquire) queues the waiter at that ticket (or
//     refreshes its entry) and, on a node where the key is free and the
//     waiter is the first entry, stores the lock and takes the entry out,
//     in one atomic step. The lock is granted as every lock is: a majority
//     said yes within its validity. A failed round is undone (FairUndo):
//     the lock deleted where it was stored, the entry put back.
//   - A waiter that gives up (its wait ran out, its client hung up) leaves
//     the queue on every node (FairLeave), which announces the key where
//     it is free, so that the next waiter on any proxy tries at once.
//   - While entries are queued, a node keeps a free key reserved for them
//     (an announcing release leaves the reservation in the lock's place,
//     and every waiter's round puts it back), so that a plain SET NX,
//     which stays a bare SET NX, is refused too. A plain waiter's marked
//     rounds see the queue (ErrQueued) and join it at its end.
//
// Why the order holds: once waiter A's round has queued it on a majority,
// a later waiter B reads the tickets on a majority too, meets one of A's
// nodes and takes a ticket above A's; B's grant needs a majority of nodes
// where B is first, and every majority meets a node that still queues A.
// So while A refreshes its entry, nobody who started waiting after A was
// queued is granted before A. A node that lost its queue (a restart), or
// on which A's entry expired, is one of a minority and cannot grant alone.
// Mutual exclusion does not depend on the queue at all: a fair grant is a
// Redlock grant of the key.

// ErrQueued is an acquire's ErrNotAcquired (it matches it) when a node
// refused it because fair waiters are queued for the key.
var ErrQueued = fmt.Errorf("%w: fair waiters are queued", ErrNotAcquired)

// AcquireFair is Acquire for LOCK … FAIR: without Wait it is one round,
// granted only where nobody is queued for key; with Wait, it takes a
// ticket in the key's fair queue and waits its turn until it is granted
// the lock, wait has passed, or ctx is done; then it leaves the queue. It
// returns as Acquire does.
func (c *Cluster) AcquireFair(ctx context.Context, key, token string, ttl time.Duration, opts ...Option) (Lock, error) {
	wait := optionsOf(opts).wait
	if wait <= 0 {
		return c.acquireCmd(ctx, Cmd{Kind: FairAcquire, Key: key, Token: token, TTL: ttl})
	}
	deadline := c.cfg.Now().Add(wait)
	return waitRounds(c, ctx, key, deadline, c.fairWait(ctx, key, token, ttl, deadline))
}

// fairWait is a fair waiter's blocking acquire until deadline: its first
// round takes a ticket (again, until one is had), each round then tries
// at that ticket, and a waiter that gives up leaves the queue.
func (c *Cluster) fairWait(ctx context.Context, key, token string, ttl time.Duration, deadline time.Time) blocking[Lock] {
	var ticket int64
	return blocking[Lock]{
		try: func(time.Duration) (Lock, error) {
			if ttl <= 0 {
				return Lock{}, ErrInvalidTTL
			}
			if err := ctx.Err(); err != nil {
				return Lock{}, err
			}
			if ticket == 0 {
				t, err := c.fairTicket(ctx, key)
				if err != nil {
					return Lock{}, err
				}
				ticket = t
			}
			return c.fairRound(ctx, key, token, ticket, ttl, c.entryTTL(deadline))
		},
		// The release was not this waiter's to take: the local waiter
		// behind it may be first in the queue.
		handOn: true,
		gaveUp: func(bool) {
			if ticket != 0 {
				c.fairLeave(key, token)
			}
		},
	}
}

// entryTTL is how long a round keeps the waiter's entry queued: as long as
// a wait mark (markTTL), since the waiter refreshes both with each round;
// past that, an entry whose waiter died leaves the queue by itself.
func (c *Cluster) entryTTL(deadline time.Time) time.Duration {
	return max(c.markTTL(deadline), time.Millisecond)
}

// fairTicket is the next ticket after the largest queued for key on any
// node (nextAboveThen, as a fence is).
func (c *Cluster) fairTicket(ctx context.Context, key string) (int64, error) {
	done := c.begin(OpFair)
	ticket, err := orLeft(awaitThen(ctx, func(then func(int64, error)) {
		c.nextAboveThen(OpFair, Cmd{Kind: FairTail, Key: key}, then)
	}))
	done(err, 0, 0)
	return ticket, err
}

// fairRound is one FairAcquire round: a grant, undone where it fails.
// After a grant, a node that did not store it still queues the token:
// it leaves that queue, so that it does not stand first there. It stops
// waiting when ctx ends: a grant that comes after that is undone as a
// failed round's is, and the waiter, gone, then leaves the queue, where
// that undo put its entry back.
func (c *Cluster) fairRound(ctx context.Context, key, token string, ticket int64, ttl, entry time.Duration) (Lock, error) {
	end := c.begin(OpAcquire)
	g := c.acquireGrant(Cmd{Kind: FairAcquire, Key: key, Token: token, TTL: ttl, N: ticket, Add: entry})
	g.undo = c.undoFair(key, token, ticket, ttl, entry) // the entry goes back in the queue too
	g.left = func() { c.leaveAll(key, token) }
	v, r, err := c.grantRound(ctx, g)
	var l Lock
	if err == nil {
		l = Lock{Key: key, Token: token, Validity: v}
		r.afterAll(func(tally) { c.leaveWhere(key, token, r) })
	}
	end(err, l.Validity, ttl)
	return l, err
}

// undoFair is the undo of a failed fair round: the lock deleted and the
// entry queued again on every node that did not refuse the round; a node
// that did not answer the undo gets the release again later.
func (c *Cluster) undoFair(key, token string, ticket int64, ttl, entry time.Duration) func(*round, func()) {
	cmd := Cmd{Kind: FairUndo, Key: key, Token: token, N: ticket, Add: entry}
	return func(g *round, done func()) {
		ask := func(i int) (Cmd, bool) { return cmd, g.landed(i, refused) }
		c.collectThen(OpAcquire, ask, okVote, func(r *round, _ tally) {
			r.eachUnanswered(func(i int) { c.pending.add(i, c.db, key, token, ttl, true) })
			done()
		})
	}
}

// leaveWhere takes token out of the queue on the nodes that did not grant
// round g, once every reply is in. It waits for nothing.
func (c *Cluster) leaveWhere(key, token string, g *round) {
	cmd := Cmd{Kind: FairLeave, Key: key, Token: token}
	ask := func(i int) (Cmd, bool) { return cmd, !g.reply(i).OK }
	c.collectThen(OpFair, ask, okVote, func(*round, tally) {})
}

// leaveAll is fairLeave that waits for nothing: for a waiter whose caller
// is gone.
func (c *Cluster) leaveAll(key, token string) {
	c.collectThen(OpFair, same(Cmd{Kind: FairLeave, Key: key, Token: token}), anyVote, func(*round, tally) {
		c.wake.notify(c.db, key)
	})
}

// fairLeave takes token out of key's queue on every node, and wakes this
// proxy's next waiter of key (the nodes announce it to the others).
func (c *Cluster) fairLeave(key, token string) {
	done := c.begin(OpFair)
	_, t := c.collect(OpFair, same(Cmd{Kind: FairLeave, Key: key, Token: token}), anyVote)
	c.wake.notify(c.db, key)
	done(c.heard(&t), 0, 0)
}

// sawQueue reports whether a node refused round r's SetNX because fair
// waiters are queued for the key. Every reply is in (a failed round).
func (r *round) sawQueue() bool {
	return slices.ContainsFunc(r.calls, func(nc nodeCall) bool { return nc.rep.Err == nil && !nc.rep.OK && nc.rep.N == FairQueued })
}
