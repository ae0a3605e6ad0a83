package quorum

import (
	"context"
	"errors"
	"time"
)

// Multi-key locks (node-redlock's multi-resource locks) must be
// all-or-nothing on every node, or two clients locking overlapping sets
// could each hold part of the other's: each node stores all keys or none
// (SetNXAll, ExtendAll, ReleaseEach are atomic there).

// AcquireAll locks every key with token as one lock: on each node all keys
// or none, granted when a majority of nodes stored all of them within the
// validity. A failure releases what the round stored anywhere, as a failed
// Acquire does, and so does a grant that comes after ctx ended (the wait
// then ends with ctx's error).
func (c *Cluster) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (l Lock, err error) {
	done := c.begin(OpAcquire)
	defer func() { done(err, l.Validity, ttl) }()
	if len(keys) == 0 {
		return Lock{}, errNoKeys
	}
	return c.grantLock(ctx, keys[0], token, grant{
		op: OpAcquire, ttl: ttl, early: true, failed: ErrNotAcquired,
		cmd:  Cmd{Kind: SetNXAll, Key: keys[0], Keys: keys, Token: token, TTL: ttl},
		undo: func(g *round, done func()) { c.releaseEach(OpAcquire, keys, token, ttl, g, done) },
	})
}

var errNoKeys = errors.New("quorum: no keys")

// ExtendAll resets the ttl of a lock taken with AcquireAll on every node
// where all its keys still hold token. Like Extend, a failure deletes
// nothing: the lock stands until the validity reported before.
func (c *Cluster) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (v time.Duration, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, ttl) }()
	if len(keys) == 0 {
		return 0, errNoKeys
	}
	v, _, err = c.grantRound(ctx, grant{op: OpExtend, ttl: ttl, failed: ErrNotHeld,
		cmd: Cmd{Kind: ExtendAll, Key: keys[0], Keys: keys, Token: token, TTL: ttl}})
	return v, err
}

// releaseEach is the undo of a failed AcquireAll (g): every key that holds
// token is deleted on every node that did not refuse the round; a node that
// does not answer gets each key's release again later, and so does one that
// did not answer g, whose grant may still land.
func (c *Cluster) releaseEach(op string, keys []string, token string, ttl time.Duration, g *round, done func()) {
	cmd := Cmd{Kind: ReleaseEach, Key: keys[0], Keys: keys, Token: token}
	c.collectThen(op, func(i int) (Cmd, bool) { return cmd, g.landed(i, refused) }, anyVote, func(r *round, _ tally) {
		c.pendingEach(r, g, keys, token, ttl)
		done()
	})
}

// pendingEach remembers, per node and key, what releaseEach must send
// again: where the undo r had no answer, and where g's write may still
// land (eachMayLand).
func (c *Cluster) pendingEach(r, g *round, keys []string, token string, ttl time.Duration) {
	again := func(i int, answered bool) {
		rep := r.reply(i)
		for j, k := range keys {
			if deleted := j < len(rep.Each) && rep.Each[j]; !deleted {
				c.pending.add(i, c.db, k, token, ttl, answered)
			}
		}
	}
	for i := range r.calls {
		if r.calls[i].asked && r.reply(i).Err != nil {
			again(i, false)
		}
	}
	r.eachMayLand(g, func(i int) { again(i, true) })
}
