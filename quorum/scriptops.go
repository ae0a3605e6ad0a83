package quorum

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// These operations exist for the lock scripts of client libraries (redis-py,
// go-redsync), whose replies distinguish more cases than Release and Extend.

// TTLAdder is implemented by nodes that can lengthen a key's remaining ttl
// by a relative amount, as redis-py's Lock.extend does by default. It is
// optional; ExtendAdd fails with ErrUnsupported when a node lacks it.
type TTLAdder interface {
	// CompareAndAddTTL adds add to key's remaining ttl if and only if key
	// holds token and has an expiry, atomically, capping the result at
	// limit. It returns the new ttl.
	CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error)
}

// ExtendAdd adds add to the remaining ttl of key on every node where it
// holds token, never beyond limit (the proxy's max-ttl, which the restart
// quarantine relies on). It succeeds when a majority did so; the validity
// is computed from the ttl that a majority now guarantees. Like Extend, a
// failure deletes nothing.
func (c *Cluster) ExtendAdd(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, error) {
	if add <= 0 || limit <= 0 {
		return 0, ErrInvalidTTL
	}
	for _, n := range c.nodes {
		if _, ok := n.(TTLAdder); !ok {
			return 0, fmt.Errorf("%w: %s cannot add to a ttl", ErrUnsupported, n.Name())
		}
	}
	t0 := c.cfg.Now()
	type added struct {
		ttl time.Duration
		ok  bool
	}
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (added, error) {
		d, ok, err := n.(TTLAdder).CompareAndAddTTL(ctx, key, token, add, limit)
		return added{d, ok}, err
	})
	var t tally
	var ttls []time.Duration
	for range c.nodes {
		r := <-ch
		t.add(r.val.ok, r.err)
		if r.err == nil && r.val.ok {
			ttls = append(ttls, r.val.ttl)
		}
	}
	if t.yes >= c.Quorum() {
		slices.Sort(ttls)
		ttl := ttls[len(ttls)-c.Quorum()] // q nodes hold it at least this long
		if v := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor); v > 0 {
			return v, nil
		}
	}
	return 0, c.failRound(&t, ErrNotHeld)
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
// token", as go-redsync's delete script does. A node that did not delete
// is read again to classify it; the read is not atomic with the delete,
// which only matters for the reply, never for what is deleted.
func (c *Cluster) ReleaseStatus(ctx context.Context, key, token string) (ReleaseResult, error) {
	ch := fanout(cleanupCtx(ctx), c, func(ctx context.Context, n Node) (ReleaseResult, error) {
		ok, err := c.releaseOn(ctx, n, key, token, 0, true)
		if err != nil || ok {
			return Released, err
		}
		if _, _, held, err := n.Get(ctx, key); err != nil || held {
			return ReleasedOther, err
		}
		return ReleasedAbsent, nil
	})
	var t tally
	absent := 0
	for range c.nodes {
		r := <-ch
		t.add(r.val == Released, r.err)
		if r.err == nil && r.val == ReleasedAbsent {
			absent++
		}
	}
	if t.yes > 0 {
		c.wake.notify(key)
	}
	switch {
	case t.yes >= c.Quorum():
		return Released, nil
	case t.answered() < c.Quorum():
		return ReleasedOther, c.noQuorum(&t)
	case absent >= c.Quorum():
		return ReleasedAbsent, nil
	}
	return ReleasedOther, nil
}

// ExtendOrAcquire extends key where token holds it and takes it where it is
// free (go-redsync's touch-or-setnx), on every node. It succeeds when a
// majority holds it for token afterwards within the validity. A failure
// undoes only what this round acquired: the nodes that took the key free
// (or did not answer) are released, as after a failed Acquire; the nodes
// that extended keep the token, as after a failed Extend, so a lock the
// caller already held stands until the validity it was last told.
func (c *Cluster) ExtendOrAcquire(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	// taken[i]: node i answered by SET NX or not at all; kept[i]: it extended.
	marks := make([]bool, 2*len(c.nodes))
	taken, kept := marks[:len(c.nodes)], marks[len(c.nodes):]
	// Each node's call writes only its own index, and extendRound waits
	// for every answer before the marks are read.
	note := func(n Node, extended bool) {
		if i := c.indexOf(n); i >= 0 {
			kept[i], taken[i] = extended, !extended
		}
	}
	// Two atomic steps per node: whatever happens between them, the node
	// ends up either holding token with the new ttl or voting no.
	v, _, err := c.extendRound(ctx, ttl, ErrNotAcquired, func(ctx context.Context, n Node) (bool, error) {
		ok, err := n.CompareAndExtend(ctx, key, token, ttl)
		if ok || err != nil {
			note(n, ok)
			return ok, err
		}
		note(n, false)
		return n.SetNX(ctx, key, token, ttl)
	})
	if err != nil && slices.Contains(taken, true) {
		c.releaseExcept(ctx, key, token, ttl, nil, kept)
	}
	return v, err
}
