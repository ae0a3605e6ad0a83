package quorum

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
)

// Reentrant locks (LOCK … OWNER id) keep their state on the backends, so
// that any proxy in front of the same backends sees the same owner and hold
// count:
//
//   - the token names the owner: "owner:<len(id)>:<id>:<random>". The length
//     keeps owner "a" from matching a token of owner "a:b"; the random part
//     makes each round's token unique, so undoing one round can never
//     remove another round's hold;
//   - the hold count lives beside the lock, at HoldsKey(key), as
//     "<token> <count>" (FormatHolds, ParseHolds), changed atomically with
//     the lock key by each node and given the lock's ttl. It is bound to
//     the token, so a count left behind by an earlier lock means nothing to
//     the next one; no companion key (or a stale one) counts as one hold.
//
// A LOCK … OWNER round adds a hold on every node where the owner's token
// stands (or sets a fresh token where the key is free), and is granted
// when a majority answers with one token. A round that is not granted, or
// the part of a granted one that went to another token, is undone node by
// node, exactly: each node records which token the round's hold went to
// (holdMarkKey), and the undo takes back that one hold, or, where the
// round has not arrived yet, makes sure it adds nothing when it does but a
// hold of the granted token. So a node counts the granted holds of the
// token it stores and nothing else.
//
// Each node still counts on its own: a node that missed a granted round
// (it never ran there) counts one hold too few and lets go early on its own
// (a minority). The lock is held while a majority holds its token, and its
// hold count is the one a majority agrees on (majorityHeld); once a
// majority has let go, the quorum releases the copies left elsewhere.

// ownerPrefix marks tokens of reentrant locks.
const ownerPrefix = "owner:"

// HoldsKey is where the nodes keep the hold count of a reentrant lock.
func HoldsKey(key string) string { return slot.Key("redlockd:holds:", key) }

// holdMarkKey is where a node records what one round of LockOwner (named
// by its round token) did there; see Reentrant.HoldOwner.
func holdMarkKey(key, token string) string { return "redlockd:hold:" + slot.Tagged(key) + ":" + token }

// FormatHolds is the text of a hold count as the nodes store it at
// HoldsKey: "<token> <count>".
func FormatHolds(token string, n int64) string { return token + " " + strconv.FormatInt(n, 10) }

// ParseHolds reads FormatHolds's text. The count is after the last space:
// a token may contain spaces (an owner id may), the count never does.
func ParseHolds(s string) (token string, n int64, ok bool) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// OwnerPrefix is the start of every token of owner id.
func OwnerPrefix(id string) string {
	return ownerPrefix + strconv.Itoa(len(id)) + ":" + id + ":"
}

// NewOwnerToken returns a fresh token for a lock of owner id.
func NewOwnerToken(id string) string { return OwnerPrefix(id) + NewToken() }

// IsOwnerToken reports whether token belongs to a reentrant lock.
func IsOwnerToken(token string) bool { return strings.HasPrefix(token, ownerPrefix) }

// Reentered is a hold of an owner's lock (the first or one more): the lock
// and the hold count a majority of its nodes agree on.
type Reentered struct {
	Lock
	Holds int64
}

// ownerRounds bounds the rounds of one LockOwner that end in a split
// among the owner's own tokens.
const ownerRounds = 8

// LockOwner takes one hold of the lock of owner id on key: one more hold
// when the owner holds it (the same token, ttl raised to at least ttl), a
// fresh lock otherwise. Each round runs HoldOwner on every node with a new
// token; the hold is granted when a majority answers with one token of id
// within the validity. Whatever the round added elsewhere is taken back.
//
// Concurrent first LOCKs of one owner can leave its tokens split with no
// majority for any; every one of them then undoes its round and tries
// again after a pause, up to ownerRounds times, so that a LOCK of the
// owner is not refused for a lock the owner is taking. It returns
// ErrNotAcquired when another owner holds the lock, a *NoQuorumError when
// too few nodes answered, and ctx's error, with the round undone, when ctx
// is done before a round's grant could be handed over. With Wait, it is
// retried as a blocking Acquire is.
func (c *Cluster) LockOwner(ctx context.Context, key, id string, ttl time.Duration, opts ...Option) (Reentered, error) {
	if wait := waitOf(opts); wait > 0 {
		return c.lockOwnerWait(ctx, key, id, ttl, wait)
	}
	return c.lockOwner(ctx, key, id, ttl)
}

// lockOwner is one LockOwner, its rounds bounded by ownerRounds.
func (c *Cluster) lockOwner(ctx context.Context, key, id string, ttl time.Duration) (r Reentered, err error) {
	done := c.begin(OpReenter)
	defer func() { done(err, r.Validity, ttl) }()
	if ttl <= 0 {
		return Reentered{}, ErrInvalidTTL
	}
	for round := 1; ; round++ {
		if err := ctx.Err(); err != nil {
			return Reentered{}, err
		}
		r, split, err := c.ownerRound(ctx, key, id, ttl)
		if !split || round == ownerRounds || !sleepCtx(ctx, c.jitter()) {
			return r, err
		}
	}
}

// lockOwnerWait is LockOwner retried as a blocking Acquire is, until it
// succeeds, wait has passed, or ctx is done.
func (c *Cluster) lockOwnerWait(ctx context.Context, key, id string, ttl, wait time.Duration) (Reentered, error) {
	return waitRounds(c, ctx, key, c.cfg.Now().Add(wait), blocking[Reentered]{
		try: func(time.Duration) (Reentered, error) { return c.lockOwner(ctx, key, id, ttl) },
	})
}

// ownerRound is one round of LockOwner: a grant where a majority answered
// with one token of id. split reports a round lost to a split among the
// owner's own tokens: worth another round.
func (c *Cluster) ownerRound(ctx context.Context, key, id string, ttl time.Duration) (r Reentered, split bool, err error) {
	token := NewOwnerToken(id)
	mark := holdMarkKey(key, token)
	q := c.Quorum()
	// agree runs once a majority said yes, every reply in (it is then
	// seen here, the round's outcome handed over after it).
	var agreed bool
	var tok string
	var holds int64
	v, rd, err := c.grantRound(context.Background(), grant{
		op: OpReenter, ttl: ttl, failed: ErrNotAcquired,
		cmd: Cmd{Kind: HoldOwner, Key: key, Token: token, Prefix: OwnerPrefix(id), Mark: mark, TTL: ttl},
		agree: func(r *round) bool {
			agreed = true
			tok, holds = majorityHeld(r.holds(), q)
			return tok != ""
		},
	})
	// A majority of yes replies without one token among them.
	split = err == ErrNotAcquired && agreed && tok == ""
	if err != nil || ctx.Err() != nil {
		// Too late to use, or its caller is gone (a client that hung up
		// while the round was in flight): the round's holds are undone
		// like those of a round that lost, so none is left with no holder.
		tok = ""
	}
	c.undoHolds(key, mark, tok, ttl, rd)
	switch {
	case tok != "":
		return Reentered{Lock{Key: key, Token: tok, Validity: v}, holds}, false, nil
	case ctx.Err() != nil:
		return Reentered{}, false, ctx.Err()
	}
	return Reentered{}, split, err
}

// holds are the tokens and hold counts of an owner round's yes replies;
// every reply is in.
func (r *round) holds() []stored[int64] {
	var hs []stored[int64]
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && rep.OK {
			hs = append(hs, stored[int64]{rep.Token, rep.N})
		}
	}
	return hs
}

// undoHolds takes back what round g added outside the granted lock (keep;
// "" when nothing was granted): the holds on nodes that answered with
// another token, and whatever a node that did not answer may have added or
// may still add. A node that does not answer the undo gets it again later.
func (c *Cluster) undoHolds(key, mark, keep string, ttl time.Duration, g *round) {
	undo := func(i int) bool {
		rep := g.reply(i)
		return unanswered(rep) || (rep.Err == nil && rep.OK && rep.Token != keep)
	}
	if !slices.ContainsFunc(g.calls, func(nc nodeCall) bool { return undo(nc.i) }) {
		return // the usual grant: every node answered with the granted token
	}
	cmd := Cmd{Kind: UndoHold, Key: key, Mark: mark, Token: keep, TTL: ttl}
	r, _ := c.collect(OpReenter, func(i int) (Cmd, bool) { return cmd, undo(i) }, okVote)
	r.eachUnanswered(func(i int) { c.pending.addUndo(i, c.db, key, mark, keep, ttl) })
}

// majorityHeld finds the token held on at least q nodes and the hold count
// that q of them agree on (the q-th largest).
func majorityHeld(hs []stored[int64], q int) (string, int64) {
	tok, ok := majorityOf(hs, q)
	if !ok {
		return "", 0
	}
	n, _ := qthLargest(numbersOf(hs, tok), q)
	return tok, n
}

// Unhold drops one hold of token's lock on every node. released reports
// whether a majority held the token; remaining is the holds a majority still
// keeps (0: the lock is free; any node's leftover copy is then released).
// For a token without holds this is Release, and like it runs to its end
// whatever ctx says.
func (c *Cluster) Unhold(ctx context.Context, key, token string) (released bool, remaining int64, err error) {
	done := c.begin(OpRelease)
	defer func() { done(boolOutcome(released, err), 0, 0) }()
	r, t := c.collect(OpRelease, same(Cmd{Kind: Unhold, Key: key, Token: token}), okVote)
	var still []stored[int64]
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && rep.OK && rep.N > 0 {
			still = append(still, stored[int64]{token, rep.N})
		}
	}
	_, remaining = majorityHeld(still, c.Quorum())
	if remaining == 0 && len(still) > 0 {
		c.releaseAll(OpRelease, key, token)
	}
	if remaining == 0 {
		// The lock is free: a node that missed the last hold's drop keeps
		// its copy until it is released there too.
		r.eachUnanswered(func(i int) { c.pending.add(i, c.db, key, token, 0, false) })
		if t.yes > 0 {
			c.wake.notify(c.db, key)
		}
	}
	released, err = c.majority(&t)
	return released, remaining, err
}

// Renew extends a lock as Extend does; for an owner lock it extends its
// hold count along with it, so that the count never expires before the lock,
// and never shortens either (the lock's other holds keep their validity).
func (c *Cluster) Renew(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	v, _, err := c.renew(ctx, key, token, ttl)
	return v, err
}

// renew is Renew that also reports which nodes answered "not held".
func (c *Cluster) renew(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, missing []bool, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, ttl) }()
	cmd := Cmd{Kind: cmdsOf(token).extend, Key: key, Token: token, TTL: ttl}
	v, r, err := c.grantRound(ctx, grant{op: OpExtend, ttl: ttl, failed: ErrNotHeld, ask: same(cmd)})
	if err != nil {
		return 0, nil, err
	}
	missing = make([]bool, len(r.calls))
	for i := range r.calls {
		rep := r.reply(i)
		missing[i] = rep.Err == nil && !rep.OK
	}
	return v, missing, nil
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
