package quorum

import (
	"context"
	"slices"
	"time"
)

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
//
// It waits for the restore until ctx ends, and then returns ctx's error;
// the restore, once started, runs to its end all the same.
func (c *Cluster) RenewKept(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	v, missing, err := c.renew(ctx, key, token, ttl)
	if err != nil || !slices.Contains(missing, true) {
		return v, err
	}
	if _, err := await(ctx, func(ch chan struct{}) {
		c.restoreThen(key, token, ttl, missing, func() { give(ch, struct{}{}, nil) })
	}); err != nil {
		return 0, err
	}
	return v, nil
}

// restoreThen stores key=token on the nodes marked in missing where key
// is absent (an owner lock with the largest hold count a holder reports),
// and calls done once their replies are in. Its outcome changes nothing
// the caller was told: the lock already holds a majority.
func (c *Cluster) restoreThen(key, token string, ttl time.Duration, missing []bool, done func()) {
	cmd := Cmd{Kind: cmdsOf(token).restore, Key: key, Token: token, TTL: ttl}
	restore := func() {
		c.collectThen(OpExtend, func(i int) (Cmd, bool) { return cmd, missing[i] }, okVote, func(*round, tally) { done() })
	}
	switch {
	case IsOwnerToken(token):
		c.maxHoldsThen(key, token, missing, func(n int64) {
			cmd.N = n
			restore()
		})
		return
	case cmd.Kind == RestoreHeld:
		cmd.N = 1 // a plain lock is one hold
	}
	restore()
}

// maxHoldsThen reads an owner lock's hold count on the nodes that still
// hold it and gives then the largest. A restored node given too many
// holds keeps its copy longer (availability); one given too few could
// make the majority's count drop to 0 while holds remain (safety), so the
// largest.
func (c *Cluster) maxHoldsThen(key, token string, missing []bool, then func(int64)) {
	cmd := Cmd{Kind: Get, Key: HoldsKey(key)}
	c.collectThen(OpExtend, func(i int) (Cmd, bool) { return cmd, !missing[i] }, okVote, func(r *round, _ tally) {
		most := int64(1) // no companion key counts as one hold
		for i := range r.calls {
			if rep := r.reply(i); r.calls[i].asked && rep.Err == nil && rep.OK {
				most = max(most, holdsFor(rep.Token, token))
			}
		}
		then(most)
	})
}

// holdsFor reads a stored hold count (ParseHolds's format); a count of
// another token, or a malformed or zero one, is one hold.
func holdsFor(s, token string) int64 {
	if tok, n, ok := ParseHolds(s); ok && tok == token && n > 0 {
		return n
	}
	return 1
}
