package quorum

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Lock is a lock held on a majority of nodes.
type Lock struct {
	Key   string
	Token string
	// Validity is how long, from the moment Acquire returned, the lock can
	// be trusted: ttl minus the time spent acquiring minus the drift.
	Validity time.Duration
}

// Acquire makes one Redlock round: SET key token NX PX ttl on every node at
// once. It returns the lock when a majority granted it within its validity.
// Otherwise it releases the token on every node (under a context that ctx's
// cancellation cannot cut short) and returns ErrNotAcquired (contention) or
// a *NoQuorumError (too few nodes answered).
func (c *Cluster) Acquire(ctx context.Context, key, token string, ttl time.Duration) (l Lock, err error) {
	return c.acquire(ctx, key, token, ttl, 0)
}

// acquire is Acquire that, with mark > 0, marks key as waited for on the
// nodes that are WaitMarkers, in the same step as their SET NX.
func (c *Cluster) acquire(ctx context.Context, key, token string, ttl, mark time.Duration) (l Lock, err error) {
	ctx, done := c.begin(ctx, OpAcquire)
	defer func() { done(err, l.Validity, ttl) }()
	if ttl <= 0 {
		return Lock{}, ErrInvalidTTL
	}
	// Node calls outlive a cancellation (see fanout), so a caller that is
	// already gone must not start a round at all.
	if err := ctx.Err(); err != nil {
		return Lock{}, err
	}
	t0 := c.cfg.Now()
	ch := fanoutWith(ctx, c, func(ctx context.Context, n Node) (bool, error) {
		if m, ok := n.(WaitMarker); ok && mark > 0 {
			return m.SetNXMarked(ctx, key, token, ttl, mark)
		}
		return n.SetNX(ctx, key, token, ttl)
	}, func(_ int, n AsyncNode, deadline time.Time, done func(bool, error)) {
		if m, ok := n.(AsyncWaitMarker); ok && mark > 0 {
			m.SetNXMarkedAsync(deadline, key, token, ttl, mark, done)
			return
		}
		n.SetNXAsync(deadline, key, token, ttl, done)
	})
	var t tally
	q := c.Quorum()
	got := 0
	// unanswered marks the nodes whose SET may still land after the release;
	// refused marks those that answered nil: they never stored this SET, and
	// what they hold (possibly the same token, from an earlier acquisition
	// that is still valid) is not this round's to delete.
	marks := make([]bool, 2*len(c.nodes)) // one allocation for both
	unanswered, refused := marks[:len(c.nodes)], marks[len(c.nodes):]
	for got < len(c.nodes) {
		r := <-ch
		got++
		t.add(r.val, r.err)
		unanswered[r.node] = r.err != nil
		refused[r.node] = r.err == nil && !r.val
		if t.yes >= q {
			break // later answers are not needed; their goroutines end on their own
		}
	}
	validity := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor)
	if t.yes >= q && validity > 0 {
		return Lock{Key: key, Token: token, Validity: validity}, nil
	}
	// Let straggling SETs land (each is bounded by the node timeout) before
	// the release, or a late one would store the token after its delete.
	for ; got < len(c.nodes); got++ {
		r := <-ch
		unanswered[r.node] = r.err != nil
		refused[r.node] = r.err == nil && !r.val
	}
	c.releaseExcept(ctx, key, token, ttl, unanswered, refused)
	if t.answered() < q {
		return Lock{}, c.noQuorum(&t)
	}
	return Lock{}, ErrNotAcquired
}

// AcquireWait retries Acquire until it succeeds, wait has passed, or ctx is
// done, pausing a random delay between rounds so that competing clients do
// not split the votes forever. A release of key (through this Cluster, or
// notified by a ReleaseNotifier node) cuts the pause short for the oldest
// waiter of the key. A NoQuorumError is retried like contention while time
// remains; the last round's error is returned.
//
// The first round is a plain Acquire, so an uncontended lock costs nothing
// more. Every later round marks the key as waited for on the WaitMarker
// nodes, and the first of them runs at once, before any pause: a release
// that landed between the first round and the mark published nothing, but
// the marked round then finds the key free.
func (c *Cluster) AcquireWait(ctx context.Context, key, token string, ttl, wait time.Duration) (Lock, error) {
	deadline := c.cfg.Now().Add(wait)
	// Joined before the first round, so that a release during it is not missed.
	w := c.wake.join(key)
	var mark time.Duration
	for {
		l, err := c.acquire(ctx, key, token, ttl, mark)
		if err == nil || errors.Is(err, ErrInvalidTTL) {
			c.wake.leave(w, err == nil)
			return l, err
		}
		first := mark == 0
		if mark = c.markTTL(deadline); first && mark > 0 && ctx.Err() == nil {
			continue
		}
		if !c.pauseForRetry(ctx, w, deadline) {
			c.wake.leave(w, false)
			return Lock{}, err
		}
	}
}

// Extend resets the lock's ttl on every node that still holds token. It
// succeeds when a majority did so and the new validity is positive. A failed
// extend changes nothing the caller was promised: the token stays where it
// is, so the lock stands until the validity reported before (deleting it
// would hand the key to another client while that validity still runs).
func (c *Cluster) Extend(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, err error) {
	ctx, done := c.begin(ctx, OpExtend)
	defer func() { done(err, v, ttl) }()
	v, _, err = c.extendRoundWith(ctx, ttl, ErrNotHeld, func(ctx context.Context, n Node) (bool, error) {
		return n.CompareAndExtend(ctx, key, token, ttl)
	}, func(_ int, n AsyncNode, deadline time.Time, done func(bool, error)) {
		n.CompareAndExtendAsync(deadline, key, token, ttl, done)
	})
	return v, err
}

// extendRound runs op (an extend, in one of its forms) on every node and
// returns the new validity when a majority agreed and it is positive, the
// error failRound picks otherwise. missing marks the nodes that answered
// "not held" (and were not vetoed): those a renewal may restore the lock on.
func (c *Cluster) extendRound(ctx context.Context, ttl time.Duration, failed error, op func(context.Context, Node) (bool, error)) (time.Duration, []bool, error) {
	return c.extendRoundWith(ctx, ttl, failed, op, nil)
}

// extendRoundWith is extendRound that uses aop when every node is an
// AsyncNode.
func (c *Cluster) extendRoundWith(ctx context.Context, ttl time.Duration, failed error, op func(context.Context, Node) (bool, error), aop asyncOp[bool]) (time.Duration, []bool, error) {
	if ttl <= 0 {
		return 0, nil, ErrInvalidTTL
	}
	t0 := c.cfg.Now()
	var t tally
	missing := make([]bool, len(c.nodes))
	ch := fanoutWith(ctx, c, op, aop)
	for range c.nodes {
		r := <-ch
		t.add(r.val, r.err)
		missing[r.node] = r.err == nil && !r.val
	}
	validity := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor)
	if t.yes >= c.Quorum() && validity > 0 {
		return validity, missing, nil
	}
	return 0, nil, c.failRound(&t, failed)
}

// failRound is the end of a failed extend. It deletes nothing: the nodes
// that did extend keep the token longer (availability), and those that did
// not keep what they had, so the caller's last reported validity still
// holds. It returns a *NoQuorumError when too few nodes answered, failed
// otherwise.
func (c *Cluster) failRound(t *tally, failed error) error {
	if t.answered() < c.Quorum() {
		return c.noQuorum(t)
	}
	return failed
}

// Release deletes key on every node where it still holds token. It reports
// true when a majority held it; a *NoQuorumError when too few answered.
func (c *Cluster) Release(ctx context.Context, key, token string) (released bool, err error) {
	ctx, done := c.begin(ctx, OpRelease)
	defer func() { done(boolOutcome(released, err), 0, 0) }()
	t := c.voteWith(cleanupCtx(ctx), func(ctx context.Context, n Node) (bool, error) {
		return c.releaseOn(ctx, n, key, token, 0, true)
	}, func(i int, n AsyncNode, deadline time.Time, done func(bool, error)) {
		c.releaseOnAsync(i, n, deadline, key, token, 0, true, done)
	})
	if t.yes > 0 {
		c.wake.notify(key)
	}
	if t.yes >= c.Quorum() {
		return true, nil
	}
	if t.answered() < c.Quorum() {
		return false, c.noQuorum(&t)
	}
	return false, nil
}

// releaseAll is the release after a failed operation: compare-and-delete
// on every node, remembered for a retry where a node did not answer.
func (c *Cluster) releaseAll(ctx context.Context, key, token string) {
	c.releaseExcept(ctx, key, token, 0, nil, nil)
}

// releaseExcept is releaseAll for a lock of ttl (0: unknown) that leaves
// alone the nodes marked in skip. A node marked in unanswered did not
// answer the SET of a failed acquire: that SET may still land after the
// release, so even a "not held" there is checked again later.
func (c *Cluster) releaseExcept(ctx context.Context, key, token string, ttl time.Duration, unanswered, skip []bool) {
	if skip != nil && !slices.Contains(skip, false) {
		return // every node refused the SET (plain contention): nothing to release
	}
	ch := fanoutWith(cleanupCtx(ctx), c, func(ctx context.Context, n Node) (bool, error) {
		if i := c.indexOf(n); skip != nil && i >= 0 && skip[i] {
			return false, nil
		}
		return c.releaseOn(ctx, n, key, token, ttl, false)
	}, func(i int, n AsyncNode, deadline time.Time, done func(bool, error)) {
		if skip != nil && skip[i] {
			done(false, nil)
			return
		}
		c.releaseOnAsync(i, n, deadline, key, token, ttl, false, done)
	})
	for range c.nodes {
		r := <-ch
		if r.err == nil && !r.val && unanswered != nil && unanswered[r.node] {
			c.pending.add(r.node, key, token, ttl, true)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
