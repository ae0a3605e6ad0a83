package commands

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// lockShared: LOCK key ttl … SHARED, a read lock with a reader token of
// its own (quorum.NewSharedToken): RENEW, UNLOCK, KEEPALIVE and FENCE
// reach the readers' commands through the token, in the quorum.
func (h *Handler) lockShared(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	return h.lockKind(s, key, o.wait,
		func(ctx context.Context) (quorum.Lock, error) { return cl.AcquireShared(ctx, key, o.ttl) },
		func(ctx context.Context, wait time.Duration) (quorum.Lock, error) {
			return cl.AcquireSharedWait(ctx, key, o.ttl, wait)
		})
}

// lockKind is LOCK of a kind whose round is try, or with WAIT wait: a
// grant whose client hung up while it was in flight is released (nobody
// would be told of it), and a lock the session had lost is no longer
// reported lost once it is taken again.
func (h *Handler) lockKind(s *Session, key string, wait time.Duration,
	try func(context.Context) (quorum.Lock, error),
	waitFor func(context.Context, time.Duration) (quorum.Lock, error)) (grant, error) {
	var l quorum.Lock
	var err error
	if wait > 0 {
		l, err = waitFor(s.Context(), wait)
	} else {
		l, err = try(s.Context())
	}
	if err == nil && s.Context().Err() != nil {
		err = h.undoForGone(s, l)
	}
	h.took(s, err, l.Token, key)
	return grant{Lock: l}, err
}
