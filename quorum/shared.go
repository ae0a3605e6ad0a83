package quorum

import (
	"context"
	"strings"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
)

// Read-write locks (LOCK … SHARED) keep their state on the nodes, so that
// every proxy in front of the same backends sees the same readers:
//
//   - while readers hold key, the key itself stores SharedMarker with the
//     expiry of the longest-lived reader. An exclusive acquire (SET NX, an
//     owner's HoldOwner, a library's script) therefore finds the key
//     present and fails exactly as it does against another exclusive
//     holder, at no extra cost;
//   - the readers live at SharedKey(key): each reader's token with its own
//     expiry, so that an expired reader stops counting on that node while
//     the others hold on, and the key goes with the last one;
//   - a writer that waits (LOCK … WAIT) marks WriterKey(key) on every
//     round it loses (see SetNX); while the mark lives, a node refuses new
//     readers (readers already holding still renew), so the readers drain
//     and the writer gets in. The mark is short-lived and refreshed by
//     every round of the waiting writer; its winning round clears it, a
//     writer that gives up lets it run out by its deadline, and one whose
//     client hangs up deletes it at once.
//
// Each node decides reader against writer in one atomic script. Two grants
// that exclude each other (a writer and a reader, or two writers) each need
// a majority of nodes, and any two majorities share a node, which granted
// one and so refused the other: the exclusion carries over to the quorum.
//
// Reader tokens start with sharedPrefix, chosen by the proxy, so that
// RENEW, UNLOCK, the keeper and the retries of releases can tell them from
// other tokens: Renew, the releases, restore (cmdsOf) and Fence pick the
// shared commands for them, and nothing above the quorum needs to know.

// SharedMarker is what a key held by readers stores. It is in the reserved
// namespace, so the command table refuses it as a client's value; it also
// counts as a reader token, so that a release or renewal that names it
// reaches the shared commands, which never treat it as a reader.
const SharedMarker = "redlockd:shared"

// sharedPrefix starts every reader's token.
const sharedPrefix = "shared:"

// SharedKey is where the nodes keep the readers of key.
func SharedKey(key string) string { return slot.Key("redlockd:readers:", key) }

// WriterKey is where the nodes keep the mark of a writer waiting for key.
func WriterKey(key string) string { return slot.Key(WriterPrefix, key) }

// WriterPrefix starts every WriterKey.
const WriterPrefix = "redlockd:writer:"

// NewSharedToken returns a fresh reader token.
func NewSharedToken() string { return sharedPrefix + NewToken() }

// IsSharedToken reports whether token is a reader's (or the marker).
func IsSharedToken(token string) bool {
	return strings.HasPrefix(token, sharedPrefix) || token == SharedMarker
}

// AcquireShared makes one round that adds a reader of key for ttl, with a
// fresh reader token. It is granted as Acquire is (a majority within the
// validity); a failed round removes its reader wherever it may have landed,
// and nothing else. It returns ErrNotAcquired when a writer holds the key
// or waits for it, a *NoQuorumError when too few nodes answered. With
// Wait it is retried as a blocking Acquire is.
func (c *Cluster) AcquireShared(ctx context.Context, key string, ttl time.Duration, opts ...Option) (Lock, error) {
	if o := optionsOf(opts); o.wait > 0 {
		return c.acquireSharedWait(ctx, key, ttl, o)
	}
	return c.acquireCmd(ctx, Cmd{Kind: AcquireShared, Key: key, Token: NewSharedToken(), TTL: ttl})
}

// acquireSharedWait retries AcquireShared as a blocking Acquire is retried:
// woken by a release of key, marking the key as waited for from the second
// round on so that a writer's release on any proxy is announced. Readers
// share: a waiting reader that gets in wakes the next waiter of the key at
// once, so that the readers queued behind a writer follow each other in
// without waiting for their jitter.
func (c *Cluster) acquireSharedWait(ctx context.Context, key string, ttl time.Duration, o Option) (Lock, error) {
	l, err := waitRounds(c, ctx, key, c.cfg.Now().Add(o.wait), blocking[Lock]{
		tried: o.tried,
		marks: true,
		// A fresh token per round: a late retry of one round's undo can
		// then never remove the reader a later round granted.
		try: func(mark time.Duration) (Lock, error) {
			return c.acquireCmd(ctx, Cmd{Kind: AcquireShared, Key: key, Token: NewSharedToken(), TTL: ttl, Add: mark})
		},
	})
	if err == nil {
		c.wake.notify(c.db, key)
	}
	return l, err
}

// dropWriterMark deletes the mark of a writer that waited for key, on
// every node, without waiting: its client is gone, and the readers it
// kept out need not wait for the mark to run out. Another writer still
// waiting marks the key again on its next round.
func (c *Cluster) dropWriterMark(key string) {
	c.collectThen(OpRelease, same(Cmd{Kind: Delete, Key: WriterKey(key)}), okVote, func(*round, tally) {})
}

// SharedReaders reads, per node in configuration order, how many live
// readers hold key there: -1 where the key is not held by readers or the
// node did not answer. It is for LOCKINFO and changes nothing.
func (c *Cluster) SharedReaders(ctx context.Context, key string) []int64 {
	r, _, err := c.collectCtx(ctx, OpInspect, same(Cmd{Kind: ReadShared, Key: key}), okVote)
	out := make([]int64, len(c.nodes))
	for i := range out {
		out[i] = -1
		if rep := r.replyOr(i, err); rep.Err == nil && rep.OK {
			out[i] = rep.N
		}
	}
	return out
}

// sharedFenceTries bounds the fences a reader takes in a row when other
// readers overtake it. Readers overlap, so another reader of the key may
// raise the counter between this one's read and raise: that is no later
// holder (no writer can be granted while this reader holds a majority),
// so the fence is taken again above it.
const sharedFenceTries = 4
