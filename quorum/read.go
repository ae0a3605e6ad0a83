package quorum

import (
	"context"
	"math"
	"time"
)

// Holder is the majority's view of a key.
type Holder struct {
	// Held is true when a majority of nodes store the same token.
	Held  bool
	Token string
	// PTTL is the remaining ttl that a majority agrees on (the smallest
	// among the best-placed majority), less the time the read took. It is
	// negative (-1ns) when that majority stores the key without expiry.
	PTTL time.Duration
	// ErrReply, where no token is held, is the error reply that a
	// majority gave to the read (Reply.ErrReply): the key holds another
	// type of value there ("WRONGTYPE …", what GET answers on Redis).
	// It exists all the same: PTTL is its remaining ttl as that majority
	// agrees on it, as for a token.
	ErrReply string
}

// Exists says whether a majority stores the key: a token, or a value of
// another type (ErrReply).
func (h Holder) Exists() bool { return h.Held || h.ErrReply != "" }

// Get reads key on every node and returns the token that a majority holds.
func (c *Cluster) Get(ctx context.Context, key string) (hd Holder, err error) {
	done := c.begin(OpGet)
	defer func() { done(err, 0, 0) }()
	t0 := c.cfg.Now()
	r, t, err := c.collectCtx(ctx, OpGet, same(Cmd{Kind: Get, Key: key}), okVote)
	if err != nil {
		return Holder{}, err
	}
	if err := c.heard(&t); err != nil {
		return Holder{}, err
	}
	return r.holder(c.Quorum(), c.cfg.Now().Sub(t0)), nil
}

// holder is the verdict of a read round r (every reply in): the token
// that q nodes store, else the error reply that q nodes gave (a key of
// another type), with the ttl q of them agree on.
func (r *round) holder(q int, elapsed time.Duration) Holder {
	hd := majorityHolder(present(r, func(rep Reply) time.Duration { return rep.TTL }), q, elapsed)
	if hd.Held {
		return hd
	}
	text, nodes := r.errorReply(q)
	if text == "" {
		return hd
	}
	ttls := make([]time.Duration, len(nodes))
	for k, i := range nodes {
		ttls[k] = r.reply(i).TTL
	}
	return Holder{ErrReply: text, PTTL: agreedTTL(ttls, q, elapsed)}
}

// stored is what one node answered that it stores: a token, and a number
// that goes with it (a read's remaining ttl, an owner's hold count).
type stored[T any] struct {
	token string
	n     T
}

// present is what round r's yes replies store, each with its number n
// (a read's ttl, an owner round's holds); every reply is in.
func present[T any](r *round, n func(Reply) T) []stored[T] {
	ss := make([]stored[T], 0, len(r.calls))
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && rep.OK {
			ss = append(ss, stored[T]{rep.Token, n(rep)})
		}
	}
	return ss
}

// majorityOf finds the token that at least q of ss store.
func majorityOf[T any](ss []stored[T], q int) (string, bool) {
	for _, s := range ss {
		n := 0
		for _, o := range ss {
			if o.token == s.token {
				n++
			}
		}
		if n >= q {
			return s.token, true
		}
	}
	return "", false
}

// numbersOf are the numbers of the nodes of ss that store token.
func numbersOf[T any](ss []stored[T], token string) (ns []T) {
	for _, s := range ss {
		if s.token == token {
			ns = append(ns, s.n)
		}
	}
	return ns
}

// majorityHolder finds the token stored on at least q nodes and the ttl
// that q of them still guarantee.
func majorityHolder(views []stored[time.Duration], q int, elapsed time.Duration) Holder {
	tok, ok := majorityOf(views, q)
	if !ok {
		return Holder{}
	}
	return Holder{Held: true, Token: tok, PTTL: agreedTTL(numbersOf(views, tok), q, elapsed)}
}

// agreedTTL is the q-th largest remaining ttl: q nodes hold the key at least
// that long. A negative ttl (no expiry) counts as the largest.
func agreedTTL(pttls []time.Duration, q int, elapsed time.Duration) time.Duration {
	const forever = time.Duration(math.MaxInt64)
	for i, d := range pttls {
		if d < 0 {
			pttls[i] = forever
		}
	}
	d, _ := qthLargest(pttls, q)
	if d == forever {
		return -1
	}
	if d -= elapsed; d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// Delete removes key on every node unconditionally (a forced release). It
// reports whether a majority held the key. Like Release it is sent, and
// runs to its end (its waiters woken), whatever ctx says; only its wait
// ends with ctx, with ctx's error.
func (c *Cluster) Delete(ctx context.Context, key string) (held bool, err error) {
	done := c.begin(OpDelete)
	defer func() { done(err, 0, 0) }()
	return orLeft(awaitSentThen(ctx, func(then func(bool, error)) {
		c.collectThen(OpDelete, same(Cmd{Kind: Delete, Key: key, Notify: true}), okVote, func(_ *round, t tally) {
			if t.yes > 0 {
				c.wake.notify(c.db, key)
			}
			then(c.majority(&t))
		})
	}))
}

// Expire sets key's ttl on every node unconditionally. It reports whether a
// majority held the key.
func (c *Cluster) Expire(ctx context.Context, key string, ttl time.Duration) (held bool, err error) {
	done := c.begin(OpExpire)
	defer func() { done(err, 0, 0) }()
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	_, t, err := c.collectCtx(ctx, OpExpire, same(Cmd{Kind: Expire, Key: key, TTL: ttl}), okVote)
	if err != nil {
		return false, err
	}
	return c.majority(&t)
}

// ForceSet stores key=token with ttl on every node unconditionally (a
// takeover). It succeeds when a majority stored it within the validity;
// a failure never leaves the token behind.
func (c *Cluster) ForceSet(ctx context.Context, key, token string, ttl time.Duration) (l Lock, err error) {
	done := c.begin(OpForceSet)
	defer func() { done(err, l.Validity, ttl) }()
	return c.grantLock(ctx, key, token, grant{
		op: OpForceSet, ttl: ttl, failed: ErrNotAcquired,
		cmd: Cmd{Kind: Set, Key: key, Token: token, TTL: ttl},
		undo: func(_ *round, done func()) {
			c.releaseThen(OpForceSet, key, token, ttl, false, nil, func(*round, tally) { done() })
		},
	})
}
