package commands

import (
	"context"

	"github.com/redlockd/redlockd/quorum"
)

// lockPermit: LOCK key ttl … PERMITS n: one of the n permits of key's
// semaphore, with a token of the proxy's choosing that names its slot, so
// that RENEW, UNLOCK, KEEPALIVE and FENCE find it from the token alone.
func (h *Handler) lockPermit(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	return h.lockKind(s, key, func(ctx context.Context) (quorum.Lock, error) {
		return cl.AcquirePermit(ctx, key, o.permits, o.ttl, quorum.Wait(o.wait))
	})
}
