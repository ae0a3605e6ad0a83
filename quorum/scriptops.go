package quorum

import (
	"context"
	"time"
)

// These operations exist for the lock scripts of client libraries (redis-py,
// go-redsync), whose replies distinguish more cases than Release and Extend.

// ExtendAdd adds add to the remaining ttl of key on every node where it
// holds token, never beyond limit (the proxy's max-ttl, which the restart
// quarantine relies on). It succeeds when a majority did so; the validity
// is computed from the ttl that a majority now guarantees. Like Extend, a
// failure deletes nothing.
func (c *Cluster) ExtendAdd(ctx context.Context, key, token string, add, limit time.Duration) (v time.Duration, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, limit) }()
	if add <= 0 {
		return 0, ErrInvalidTTL
	}
	v, _, err = c.grantRound(ctx, extendAddGrant(key, token, add, limit))
	return v, err
}

// ExtendAddAsync is ExtendAdd that does not wait: done gets the extended
// lock (its validity) or the error, once, as RenewAsync's does; an add
// of no time is ErrInvalidTTL.
func (c *Cluster) ExtendAddAsync(rp Reporter, key, token string, add, limit time.Duration, done func(Lock, error)) {
	g := extendAddGrant(key, token, add, limit)
	if add <= 0 {
		g.ttl = 0 // refused before any round, as ExtendAdd refuses it
	}
	c.grantAsync(rp, g, done)
}

// extendAddGrant is ExtendAdd's round: add to key's ttl where token
// holds it, up to limit, valid for what a majority then holds.
func extendAddGrant(key, token string, add, limit time.Duration) grant {
	return grant{op: OpExtend, ttl: limit, agreed: true, failed: ErrNotHeld,
		cmd: Cmd{Kind: AddTTL, Key: key, Token: token, Add: add, Limit: limit}}
}

// ReleaseResult is ReleaseStatus's verdict.
type ReleaseResult int

const (
	// ReleasedOther: the key is held on a majority by another token, or
	// the nodes disagree.
	ReleasedOther ReleaseResult = 0
	// Released: token held the key on a majority, and it is deleted.
	Released ReleaseResult = 1
	// ReleasedAbsent: the key was absent on a majority.
	ReleasedAbsent ReleaseResult = -1
)

// ReleaseStatus is Release that also tells "absent" from "held by another
// token", as go-redsync's delete script does: each node's compare-and-delete
// says which it found, in the same atomic step. Like Release it is sent,
// and runs to its end, whatever ctx says; only its wait ends with ctx.
func (c *Cluster) ReleaseStatus(ctx context.Context, key, token string) (res ReleaseResult, err error) {
	done := c.begin(OpRelease)
	defer func() { done(boolOutcome(res == Released, err), 0, 0) }()
	r, t, err := awaitSentThen(ctx, func(then func(*round, tally)) {
		c.releaseThen(OpRelease, key, token, 0, true, nil, then)
	})
	if err != nil {
		return ReleasedOther, err
	}
	absent := 0
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && !rep.OK && rep.N < 0 {
			absent++
		}
	}
	if t.yes >= c.Quorum() {
		return Released, nil
	}
	if err := c.heard(&t); err != nil {
		return ReleasedOther, err
	}
	if absent >= c.Quorum() {
		return ReleasedAbsent, nil
	}
	return ReleasedOther, nil
}

// ExtendOrAcquire extends key where token holds it and takes it where it is
// free (go-redsync's touch-or-setnx), on every node, in one atomic step
// each. It succeeds when a majority holds it for token afterwards within
// the validity. A failure undoes only what this round acquired: the nodes
// that took the key free (or did not answer) are released, as after a
// failed Acquire; the nodes that extended keep the token, as after a failed
// Extend, so a lock the caller already held stands until the validity it
// was last told.
func (c *Cluster) ExtendOrAcquire(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, ttl) }()
	v, _, err = c.grantRound(ctx, grant{
		op: OpExtend, ttl: ttl, failed: ErrNotAcquired,
		cmd:  Cmd{Kind: ExtendOrSetNX, Key: key, Token: token, TTL: ttl},
		kept: notStored,
	})
	return v, err
}

// notStored is a node whose ExtendOrSetNX did not take the key free: it
// refused, or it extended a hold the caller had before the round.
func notStored(rep Reply) bool { return rep.N != extendedStored }

// extendedStored is ExtendOrSetNX's N for a key it stored.
const extendedStored = 2
