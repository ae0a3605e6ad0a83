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
	if o := optionsOf(opts); o.wait > 0 {
		return c.lockOwnerWait(ctx, key, id, ttl, o)
	}
	return c.lockOwner(ctx, key, id, ttl)
}

// lockOwner is one LockOwner (LockOwnerAsync), waited for until ctx is
// done: a hold granted after that, or to a caller gone by the time it
// came, is taken back (dropHold), so that none is left with no holder.
func (c *Cluster) lockOwner(ctx context.Context, key, id string, ttl time.Duration) (Reentered, error) {
	type outcome struct {
		r    Reentered
		mark string
		err  error
	}
	abandon := func(o outcome) {
		if o.err == nil {
			c.dropHold(key, o.mark, ttl)
		}
	}
	o, err := await(ctx, func(ch chan outcome) {
		c.lockOwnerThen(ctx, key, id, ttl, func(r Reentered, mark string, err error) { give(ch, outcome{r, mark, err}, abandon) })
	})
	switch {
	case err != nil:
		return Reentered{}, err
	case o.err == nil && ctx.Err() != nil:
		abandon(o)
		return Reentered{}, ctx.Err()
	}
	return o.r, o.err
}

// lockOwnerWait is LockOwner retried as a blocking Acquire is, until it
// succeeds, wait has passed, or ctx is done.
func (c *Cluster) lockOwnerWait(ctx context.Context, key, id string, ttl time.Duration, o Option) (Reentered, error) {
	return waitRounds(c, ctx, key, c.cfg.Now().Add(o.wait), blocking[Reentered]{
		try:   func(time.Duration) (Reentered, error) { return c.lockOwner(ctx, key, id, ttl) },
		tried: o.tried,
	})
}

// LockOwnerAsync is LockOwner without Wait that does not wait: done gets
// its outcome, once, from the goroutine of the reply that decided it (or
// of the pause before a round taken again) or before LockOwnerAsync
// returns. done must not block. Its rounds run to their end whatever ctx
// says, but a hold granted once ctx is done is taken back, and done gets
// ctx's error.
func (c *Cluster) LockOwnerAsync(ctx context.Context, key, id string, ttl time.Duration, done func(Reentered, error)) {
	c.lockOwnerThen(ctx, key, id, ttl, func(r Reentered, _ string, err error) { done(r, err) })
}

// lockOwnerThen runs LockOwner's rounds, up to ownerRounds, and gives
// then the outcome and, for a hold granted, the mark of the round that
// added it (dropHold takes it back).
func (c *Cluster) lockOwnerThen(ctx context.Context, key, id string, ttl time.Duration, then func(Reentered, string, error)) {
	or := &ownerRun{ctx: ctx, c: c, key: key, id: id, ttl: ttl, then: then, report: c.begin(OpReenter)}
	if ttl <= 0 {
		or.end(Reentered{}, ErrInvalidTTL)
		return
	}
	or.next()
}

// ownerRun is one LockOwner in flight.
type ownerRun struct {
	ctx     context.Context
	c       *Cluster
	key, id string
	ttl     time.Duration
	then    func(Reentered, string, error)
	report  func(err error, validity, ttl time.Duration)
	rounds  int    // rounds started
	mark    string // the current round's
	agreed  bool   // a majority of the current round said yes
	tok     string // the token they agree on, if any
	holds   int64  // its hold count that a majority agrees on
}

// next starts a round: HoldOwner with a new token, a grant where a
// majority answered with one token of the owner.
func (or *ownerRun) next() {
	c := or.c
	or.rounds++
	token := NewOwnerToken(or.id)
	or.mark, or.agreed, or.tok, or.holds = holdMarkKey(or.key, token), false, "", 0
	c.grantThen(grant{
		op: OpReenter, ttl: or.ttl, failed: ErrNotAcquired,
		cmd: Cmd{Kind: HoldOwner, Key: or.key, Token: token, Prefix: OwnerPrefix(or.id), Mark: or.mark, TTL: or.ttl},
		// agree runs once a majority said yes, every reply in (it is then
		// seen in decided, the round's outcome handed over after it).
		agree: func(r *round) bool {
			or.agreed = true
			or.tok, or.holds = majorityHeld(present(r, func(rep Reply) int64 { return rep.N }), c.Quorum())
			return or.tok != ""
		},
	}, or.decided)
}

// decided ends a round: what it added outside the granted hold is taken
// back first. A round lost to a split among the owner's own tokens (a
// majority of yes replies without one token among them) is taken again
// after a pause, up to ownerRounds.
func (or *ownerRun) decided(v time.Duration, rd *round, err error) {
	split := err == ErrNotAcquired && or.agreed && or.tok == ""
	if err != nil {
		or.tok = ""
	}
	tok := or.tok
	or.c.undoHoldsThen(or.key, or.mark, tok, or.ttl, rd, func() {
		switch {
		case tok != "":
			or.end(Reentered{Lock{Key: or.key, Token: tok, Validity: v}, or.holds}, nil)
		case split && or.rounds < ownerRounds && or.ctx.Err() == nil:
			time.AfterFunc(or.c.jitter(), or.next)
		default:
			or.end(Reentered{}, err)
		}
	})
}

// end hands the outcome on: for a caller gone meanwhile its ctx's
// error, a hold granted to it taken back.
func (or *ownerRun) end(r Reentered, err error) {
	if or.ctx.Err() != nil {
		if err == nil {
			or.c.dropHold(or.key, or.mark, or.ttl)
		}
		r, err = Reentered{}, or.ctx.Err()
	}
	or.report(err, r.Validity, or.ttl)
	or.then(r, or.mark, err)
}

// dropHold takes back the hold that the owner round marked at mark
// added, on every node, without waiting; a node that does not answer gets
// it again later.
func (c *Cluster) dropHold(key, mark string, ttl time.Duration) {
	c.collectThen(OpReenter, same(Cmd{Kind: UndoHold, Key: key, Mark: mark, TTL: ttl}), okVote, func(r *round, _ tally) {
		r.eachUnanswered(func(i int) { c.pending.addUndo(i, c.db, key, mark, "", ttl) })
	})
}

// undoHoldsThen takes back what round g added outside the granted lock
// (keep; "" when nothing was granted): the holds on nodes that answered
// with another token, and whatever a node that did not answer may have
// added or may still add; then runs done. A node that does not answer
// the undo gets it again later.
func (c *Cluster) undoHoldsThen(key, mark, keep string, ttl time.Duration, g *round, done func()) {
	undo := func(i int) bool {
		rep := g.reply(i)
		return unanswered(rep) || (rep.Err == nil && rep.OK && rep.Token != keep)
	}
	if !slices.ContainsFunc(g.calls, func(nc nodeCall) bool { return undo(nc.i) }) {
		done() // the usual grant: every node answered with the granted token
		return
	}
	cmd := Cmd{Kind: UndoHold, Key: key, Mark: mark, Token: keep, TTL: ttl}
	c.collectThen(OpReenter, func(i int) (Cmd, bool) { return cmd, undo(i) }, okVote, func(r *round, _ tally) {
		r.eachUnanswered(func(i int) { c.pending.addUndo(i, c.db, key, mark, keep, ttl) })
		done()
	})
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
// For an exclusive lock's token without holds this is Release, and like
// it is sent, and runs to its end (the release of leftover copies
// included), whatever ctx says; only its wait ends with ctx, with ctx's
// error. A reader's token is released by Release only.
func (c *Cluster) Unhold(ctx context.Context, key, token string) (released bool, remaining int64, err error) {
	done := c.begin(OpRelease)
	defer func() { done(boolOutcome(released, err), 0, 0) }()
	type unheld struct {
		released  bool
		remaining int64
	}
	u, err := orLeft(awaitSentThen(ctx, func(then func(unheld, error)) {
		c.unholdThen(key, token, func(released bool, remaining int64, err error) { then(unheld{released, remaining}, err) })
	}))
	return u.released, u.remaining, err
}

// unholdThen is Unhold that does not wait: then gets its outcome once its
// round, and the release of the copies left where the lock is free, are
// done.
func (c *Cluster) unholdThen(key, token string, then func(released bool, remaining int64, err error)) {
	c.collectThen(OpRelease, same(Cmd{Kind: Unhold, Key: key, Token: token}), okVote, func(r *round, t tally) {
		var still []stored[int64]
		for i := range r.calls {
			if rep := r.reply(i); rep.Err == nil && rep.OK && rep.N > 0 {
				still = append(still, stored[int64]{token, rep.N})
			}
		}
		_, remaining := majorityHeld(still, c.Quorum())
		end := func() {
			if remaining == 0 {
				// The lock is free: a node that missed the last hold's
				// drop keeps its copy until it is released there too.
				r.eachUnanswered(func(i int) { c.pending.add(i, c.db, key, token, 0, false) })
				if t.yes > 0 {
					c.wake.notify(c.db, key)
				}
			}
			released, err := c.majority(&t)
			then(released, remaining, err)
		}
		if remaining == 0 && len(still) > 0 {
			c.releaseThen(OpRelease, key, token, 0, false, nil, func(*round, tally) { end() })
			return
		}
		end()
	})
}

// Renew extends a lock as Extend does; for an owner lock it extends its
// hold count along with it, so that the count never expires before the lock,
// and never shortens either (the lock's other holds keep their validity).
func (c *Cluster) Renew(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	v, _, err := c.renew(ctx, key, token, ttl)
	return v, err
}

// RenewAsync is Renew that does not wait: done gets the renewed lock
// (its validity) or the error, once, from the goroutine of the reply
// that decided it, or before RenewAsync returns; rp (nil: the Cluster's
// Observer) gets its report, as AcquireAsync's does. done must not
// block.
func (c *Cluster) RenewAsync(rp Reporter, key, token string, ttl time.Duration, done func(Lock, error)) {
	c.grantAsync(rp, renewGrant(key, token, ttl), done)
}

// renewGrant is the round of a renewal of token's lock of key for ttl:
// the extend of token's kind of lock, on every node.
func renewGrant(key, token string, ttl time.Duration) grant {
	return grant{op: OpExtend, ttl: ttl, failed: ErrNotHeld,
		cmd: Cmd{Kind: cmdsOf(token).extend, Key: key, Token: token, TTL: ttl}}
}

// renew is Renew that also reports which nodes answered "not held".
func (c *Cluster) renew(ctx context.Context, key, token string, ttl time.Duration) (v time.Duration, missing []bool, err error) {
	done := c.begin(OpExtend)
	defer func() { done(err, v, ttl) }()
	v, r, err := c.grantRound(ctx, renewGrant(key, token, ttl))
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
