package commands

import (
	"context"

	"github.com/redlockd/redlockd/quorum"
)

// lockShared: LOCK key ttl … SHARED, a read lock with a reader token of
// its own (quorum.NewSharedToken): RENEW, UNLOCK, KEEPALIVE and FENCE
// reach the readers' commands through the token, in the quorum.
func (h *Handler) lockShared(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	return h.lockKind(s, key, func(ctx context.Context) (quorum.Lock, error) {
		return cl.AcquireShared(ctx, key, o.ttl, quorum.Wait(o.wait))
	})
}
