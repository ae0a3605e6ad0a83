package quorum

import (
	"context"
	"slices"
	"time"
)

// HeldRestorer is the optional Node extension that restores an owner lock
// with its hold count. A node without it gets no restore of owner locks.
type HeldRestorer interface {
	// RestoreHeld: if key is absent, store key=token and, at holdsKey,
	// the hold count holds, both with ttl, atomically. It reports whether
	// it stored them (false: key exists, whatever it holds).
	RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error)
}

// RenewKept is the renewal of a kept lock: Renew, and when that won a
// majority, the lock is also stored again (SET NX, with ttl) on every node
// that answered "not held". Such a node is one that lost its data and is
// out of quarantine (a quarantined node's answer is vetoed, so it is not
// asked), or one where the key expired early. The restore can never take
// anything from another client: it is made only while this token holds a
// majority, so no other token can hold one, and only where the key is
// absent. It is what keeps a kept lock alive through a rolling restart of
// the backends, one at a time: each recovered node gets the lock back
// before the next one goes down.
func (c *Cluster) RenewKept(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	v, missing, err := c.renew(ctx, key, token, ttl)
	if err != nil || !slices.Contains(missing, true) {
		return v, err
	}
	c.restore(ctx, key, token, ttl, missing)
	return v, nil
}

// restore stores key=token on the nodes marked in missing where key is
// absent, and waits for their answers (each bounded by the node timeout).
// Its outcome changes nothing the caller was told: the lock already holds
// a majority.
func (c *Cluster) restore(ctx context.Context, key, token string, ttl time.Duration, missing []bool) {
	ctx = context.WithValue(ctx, opKey{}, OpExtend) // node calls count as the renewal's
	holds := int64(0)
	if IsOwnerToken(token) {
		holds = c.maxHolds(ctx, key, token, missing)
	}
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (bool, error) {
		if i := c.indexOf(n); i < 0 || !missing[i] {
			return false, nil
		}
		if holds == 0 {
			return n.SetNX(ctx, key, token, ttl)
		}
		if rn, ok := n.(HeldRestorer); ok {
			return rn.RestoreHeld(ctx, key, HoldsKey(key), token, holds, ttl)
		}
		return false, nil
	})
	for range c.nodes {
		<-ch
	}
}

// maxHolds reads an owner lock's hold count on the nodes that still hold
// it and returns the largest. A restored node given too many holds keeps
// its copy longer (availability); one given too few could make the
// majority's count drop to 0 while holds remain (safety), so the largest.
func (c *Cluster) maxHolds(ctx context.Context, key, token string, missing []bool) int64 {
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (int64, error) {
		if i := c.indexOf(n); i < 0 || missing[i] {
			return 0, nil
		}
		s, _, ok, err := n.Get(ctx, HoldsKey(key))
		if err != nil || !ok {
			return 1, err // no companion key counts as one hold
		}
		return holdsFor(s, token), nil
	})
	most := int64(1)
	for range c.nodes {
		if r := <-ch; r.err == nil {
			most = max(most, r.val)
		}
	}
	return most
}

// holdsFor reads a stored hold count (ParseHolds's format); a count of
// another token, or a malformed or zero one, is one hold.
func holdsFor(s, token string) int64 {
	if tok, n, ok := ParseHolds(s); ok && tok == token && n > 0 {
		return n
	}
	return 1
}
