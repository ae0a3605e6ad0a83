package quorum

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reentrant locks (LOCK … OWNER id) keep their state on the backends, so
// that any proxy in front of the same backends sees the same owner and hold
// count:
//
//   - the token names the owner: "owner:<len(id)>:<id>:<random>". The length
//     keeps owner "a" from matching a token of owner "a:b"; the random part
//     makes each acquisition's token unique, so a failed acquire releasing
//     its own token can never remove another acquisition of the same owner;
//   - the hold count lives beside the lock, at HoldsKey(key), as
//     "<token> <count>", changed atomically with the lock key by each node
//     and given the lock's ttl. It is bound to the token, so a count left
//     behind by an earlier lock means nothing to the next one; no companion
//     key (or a stale one) counts as one hold.
//
// Each node counts on its own; counts can diverge when a node misses a
// reentry. The lock is held while a majority still holds its token, so a
// node that counts one hold too few lets go early on its own (a minority),
// and one that counts too many keeps a stale copy until its ttl, which the
// quorum releases as soon as a majority has let go.

// ownerPrefix marks tokens of reentrant locks.
const ownerPrefix = "owner:"

// Operation names of reentry and fencing, for an Observer.
const (
	OpReenter = "reenter"
	OpFence   = "fence"
)

// Reentrant is the optional Node extension that LOCK … OWNER needs. Nodes
// without it answer every reentrant operation with ErrUnsupported (a failed
// node within the vote).
type Reentrant interface {
	// Reenter: if key holds a token that starts with prefix, refresh key's
	// ttl and add one to the hold count at holdsKey (refreshing its ttl
	// too), atomically. It returns the token and the new count; ok is false
	// when key holds no such token.
	Reenter(ctx context.Context, key, holdsKey, prefix string, ttl time.Duration) (token string, holds int64, ok bool, err error)
	// Unhold: if key holds token, drop one hold, and delete key and
	// holdsKey when none is left, atomically. remaining is the holds left
	// (0: deleted); ok is false when key does not hold token.
	Unhold(ctx context.Context, key, holdsKey, token string) (remaining int64, ok bool, err error)
	// ExtendHeld: if key holds token, set the ttl of key and of holdsKey.
	ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error)
}

// HoldsKey is where the nodes keep the hold count of a reentrant lock.
func HoldsKey(key string) string { return "redlockd:holds:{" + key + "}" }

// OwnerPrefix is the start of every token of owner id.
func OwnerPrefix(id string) string {
	return ownerPrefix + strconv.Itoa(len(id)) + ":" + id + ":"
}

// NewOwnerToken returns a fresh token for a lock of owner id.
func NewOwnerToken(id string) string { return OwnerPrefix(id) + NewToken() }

// IsOwnerToken reports whether token belongs to a reentrant lock.
func IsOwnerToken(token string) bool { return strings.HasPrefix(token, ownerPrefix) }

// Reentered is a successful reentry: the lock and its hold count.
type Reentered struct {
	Lock
	Holds int64
}

type held struct {
	token string
	holds int64
}

// Reenter adds a hold to the lock of owner id if a majority of nodes hold
// one token of id, refreshing its ttl. It returns ErrNotHeld when the owner
// holds no lock on key (then a fresh acquire with NewOwnerToken is the next
// step), a *NoQuorumError when too few nodes answered.
func (c *Cluster) Reenter(ctx context.Context, key, id string, ttl time.Duration) (r Reentered, err error) {
	ctx, done := c.begin(ctx, OpReenter)
	defer func() { done(err, r.Validity, ttl) }()
	if ttl <= 0 {
		return Reentered{}, ErrInvalidTTL
	}
	t0 := c.cfg.Now()
	prefix := OwnerPrefix(id)
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (held, error) {
		rn, ok := n.(Reentrant)
		if !ok {
			return held{}, ErrUnsupported
		}
		tok, holds, yes, err := rn.Reenter(ctx, key, HoldsKey(key), prefix, ttl)
		if !yes {
			return held{}, err
		}
		return held{tok, holds}, err
	})
	var t tally
	var hs []held
	for range c.nodes {
		r := <-ch
		t.add(r.val.token != "", r.err)
		if r.err == nil && r.val.token != "" {
			hs = append(hs, r.val)
		}
	}
	validity := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor)
	tok, holds := majorityHeld(hs, c.Quorum())
	if tok != "" && validity > 0 {
		return Reentered{Lock{Key: key, Token: tok, Validity: validity}, holds}, nil
	}
	if tok != "" {
		_, _, _ = c.Unhold(cleanupCtx(ctx), key, tok) // take back the hold just added
	}
	if t.answered() < c.Quorum() {
		return Reentered{}, c.noQuorum(&t)
	}
	return Reentered{}, ErrNotHeld
}

// majorityHeld finds the token held on at least q nodes and the hold count
// that q of them agree on (the q-th largest).
func majorityHeld(hs []held, q int) (string, int64) {
	for _, h := range hs {
		var counts []int64
		for _, o := range hs {
			if o.token == h.token {
				counts = append(counts, o.holds)
			}
		}
		if len(counts) >= q {
			slices.Sort(counts)
			return h.token, counts[len(counts)-q]
		}
	}
	return "", 0
}

// Unhold drops one hold of token's lock on every node. released reports
// whether a majority held the token; remaining is the holds a majority still
// keeps (0: the lock is free; any node's leftover copy is then released).
// For a token without holds this is Release.
func (c *Cluster) Unhold(ctx context.Context, key, token string) (released bool, remaining int64, err error) {
	ctx, done := c.begin(ctx, OpRelease)
	defer func() { done(boolOutcome(released, err), 0, 0) }()
	ctx = cleanupCtx(ctx)
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (held, error) {
		rn, ok := n.(Reentrant)
		if !ok {
			yes, err := n.CompareAndDelete(ctx, key, token)
			return heldIf(yes, token, 0), err
		}
		left, yes, err := rn.Unhold(ctx, key, HoldsKey(key), token)
		return heldIf(yes, token, left), err
	})
	var t tally
	var still []held
	var missed []int // nodes that did not answer (vetoed ones did)
	for range c.nodes {
		r := <-ch
		t.add(r.val.token != "", r.err)
		if r.err == nil && r.val.holds > 0 {
			still = append(still, r.val)
		}
		if r.err != nil && !errors.Is(r.err, ErrQuarantined) && !errors.Is(r.err, ErrRefused) {
			missed = append(missed, r.node)
		}
	}
	_, remaining = majorityHeld(still, c.Quorum())
	if remaining == 0 && len(still) > 0 {
		c.releaseAll(ctx, key, token)
	}
	if remaining == 0 {
		// The lock is free: a node that missed the last hold's drop keeps
		// its copy until it is released there too.
		for _, i := range missed {
			c.pending.add(i, key, token, 0, false)
		}
	}
	if remaining == 0 && t.yes > 0 {
		c.wake.notify(key)
	}
	if t.answered() < c.Quorum() {
		return false, remaining, c.noQuorum(&t)
	}
	return t.yes >= c.Quorum(), remaining, nil
}

func heldIf(yes bool, token string, holds int64) held {
	if !yes {
		return held{}
	}
	return held{token, holds}
}

// Renew extends a lock as Extend does; for an owner lock it extends its
// hold count along with it, so that the count never expires before the lock.
func (c *Cluster) Renew(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	v, _, err := c.renew(ctx, key, token, ttl)
	return v, err
}

// renew is Renew that also reports which nodes answered "not held".
func (c *Cluster) renew(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, missing []bool, err error) {
	ctx, done := c.begin(ctx, OpExtend)
	defer func() { done(err, v, ttl) }()
	if !IsOwnerToken(token) {
		return c.extendRoundWith(ctx, ttl, ErrNotHeld, func(ctx context.Context, n Node) (bool, error) {
			return n.CompareAndExtend(ctx, key, token, ttl)
		}, func(_ int, n AsyncNode, deadline time.Time, done func(bool, error)) {
			n.CompareAndExtendAsync(deadline, key, token, ttl, done)
		})
	}
	return c.extendRound(ctx, ttl, ErrNotHeld, func(ctx context.Context, n Node) (bool, error) {
		if rn, ok := n.(Reentrant); ok {
			return rn.ExtendHeld(ctx, key, HoldsKey(key), token, ttl)
		}
		return n.CompareAndExtend(ctx, key, token, ttl)
	})
}
