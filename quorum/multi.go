package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MultiNode is implemented by nodes that can lock several keys as one:
// node-redlock's multi-resource locks must be all-or-nothing on every node,
// or two clients locking overlapping sets could each hold part of the other's.
// It is optional so that simple Node implementations (and test fakes) need
// not provide it; the Cluster methods that need it fail with
// ErrUnsupported when a node lacks it.
type MultiNode interface {
	// SetNXAll stores every key=token with ttl if and only if none of the
	// keys is present, atomically.
	SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error)
	// ExtendAll re-sets every key to token with ttl if and only if all of
	// them hold token, atomically.
	ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error)
	// ReleaseEach deletes each key that holds token, atomically, and
	// reports per key whether it deleted it.
	ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error)
}

// ErrUnsupported reports a node that lacks an optional operation.
var ErrUnsupported = errors.New("quorum: operation not supported by this node")

// multiNodes reports an error naming the first node that is not a
// MultiNode, or nil when every node is one.
func (c *Cluster) multiNodes() error {
	for _, n := range c.nodes {
		if _, ok := n.(MultiNode); !ok {
			return fmt.Errorf("%w: %s cannot lock several keys atomically", ErrUnsupported, n.Name())
		}
	}
	return nil
}

// AcquireAll locks every key with token as one lock: on each node all keys
// or none (MultiNode.SetNXAll), granted when a majority of nodes stored all
// of them within the validity. A failure releases what it stored anywhere.
func (c *Cluster) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (Lock, error) {
	if err := c.multiOK(keys, ttl); err != nil {
		return Lock{}, err
	}
	t0 := c.cfg.Now()
	t := c.vote(ctx, func(ctx context.Context, n Node) (bool, error) {
		return n.(MultiNode).SetNXAll(ctx, keys, token, ttl)
	})
	return c.multiOutcome(ctx, &t, keys, token, ttl, t0, ErrNotAcquired)
}

// ExtendAll resets the ttl of a lock taken with AcquireAll on every node
// where all its keys still hold token. Like Extend, a failure deletes
// nothing: the lock stands until the validity reported before.
func (c *Cluster) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (time.Duration, error) {
	if err := c.multiOK(keys, ttl); err != nil {
		return 0, err
	}
	t0 := c.cfg.Now()
	t := c.vote(ctx, func(ctx context.Context, n Node) (bool, error) {
		return n.(MultiNode).ExtendAll(ctx, keys, token, ttl)
	})
	validity := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor)
	if t.yes >= c.Quorum() && validity > 0 {
		return validity, nil
	}
	return 0, c.failRound(&t, ErrNotHeld)
}

func (c *Cluster) multiOK(keys []string, ttl time.Duration) error {
	if ttl <= 0 {
		return ErrInvalidTTL
	}
	if len(keys) == 0 {
		return errors.New("quorum: no keys")
	}
	return c.multiNodes()
}

// multiOutcome applies Redlock's majority and validity rules to a
// multi-key vote, releasing the token everywhere when it failed.
func (c *Cluster) multiOutcome(ctx context.Context, t *tally, keys []string, token string, ttl time.Duration, t0 time.Time, contention error) (Lock, error) {
	validity := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor)
	if t.yes >= c.Quorum() && validity > 0 {
		return Lock{Key: keys[0], Token: token, Validity: validity}, nil
	}
	c.releaseEach(cleanupCtx(ctx), keys, token)
	if t.answered() < c.Quorum() {
		return Lock{}, c.noQuorum(t)
	}
	return Lock{}, contention
}

// releaseEach returns, per key, on how many nodes token held it.
func (c *Cluster) releaseEach(ctx context.Context, keys []string, token string) ([]int, tally) {
	ch := fanout(ctx, c, func(ctx context.Context, n Node) ([]bool, error) {
		held, err := n.(MultiNode).ReleaseEach(ctx, keys, token)
		if i := c.indexOf(n); err != nil && i >= 0 {
			for _, k := range keys {
				c.pending.add(i, k, token, 0, false)
			}
		}
		return held, err
	})
	held := make([]int, len(keys))
	var t tally
	for range c.nodes {
		r := <-ch
		t.add(r.err == nil, r.err)
		for i, ok := range r.val {
			if ok && i < len(held) {
				held[i]++
			}
		}
	}
	return held, t
}
