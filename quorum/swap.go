package quorum

import (
	"context"
	"time"
)

// HandOver gives the lock on key from token old to token next (SET key next
// PX ttl IFEQ old): on each node, atomically, where key holds old it is
// set to next for ttl. It returns the new lock when a majority swapped
// within its validity.
//
// The round is a grant, undone where it fails: wherever it may have
// swapped, next is swapped back to old, with the ttl the swap set. Old may
// then live longer on those nodes than it would have (at most ttl from the
// round), which costs availability, never safety: no node holds a token
// that nobody was told holds the lock, except a node that answered
// neither round, whose copy of next is a minority held by nobody until its
// ttl. The error is then ErrNotAcquired (old did not hold key on a
// majority) or a *NoQuorumError.
func (c *Cluster) HandOver(ctx context.Context, key, old, next string, ttl time.Duration) (l Lock, err error) {
	done := c.begin(OpHandOver)
	defer func() { done(err, l.Validity, ttl) }()
	return c.grantLock(ctx, key, next, grant{
		op: OpHandOver, ttl: ttl, early: true, failed: ErrNotAcquired,
		cmd:  Cmd{Kind: CompareAndSwap, Key: key, Old: old, Token: next, TTL: ttl},
		undo: c.swapBack(key, old, next, ttl),
	})
}

// swapBack is the undo of a failed hand-over: next is swapped back to old on
// every node that did not refuse the round (a refusal swapped nothing; a
// node that did not answer may have swapped, and the swap back reaches it
// after the swap, as a node runs commands on one key in order).
func (c *Cluster) swapBack(key, old, next string, ttl time.Duration) func(*round, func()) {
	back := Cmd{Kind: CompareAndSwap, Key: key, Old: next, Token: old, TTL: ttl}
	return func(g *round, done func()) {
		ask := func(i int) (Cmd, bool) { return back, g.landed(i, refused) }
		c.collectThen(OpHandOver, ask, okVote, func(*round, tally) { done() })
	}
}
