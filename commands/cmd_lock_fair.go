package commands

import (
	"context"

	"github.com/redlockd/redlockd/quorum"
)

// lockFair: LOCK key ttl … FAIR. With WAIT the client takes a place in the
// key's queue of waiters and is granted the lock in its turn; without it,
// it is a try-lock that succeeds only while nobody is queued. Once
// granted, a fair lock is a plain lock of its token: RENEW, UNLOCK,
// KEEPALIVE and FENCE treat it as one.
func (h *Handler) lockFair(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	return h.lockKind(s, key, func(ctx context.Context) (quorum.Lock, error) {
		return cl.AcquireFair(ctx, key, o.token, o.ttl, quorum.Wait(o.wait))
	})
}
