package commands

import "github.com/redlockd/redlockd/quorum"

// lockPermit: LOCK key ttl … PERMITS n: one of the n permits of key's
// semaphore, with a token of the proxy's choosing that names its slot, so
// that RENEW, UNLOCK, KEEPALIVE and FENCE find it from the token alone.
func (h *Handler) lockPermit(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	var l quorum.Lock
	var err error
	if o.wait > 0 {
		l, err = cl.AcquirePermitWait(s.Context(), key, o.permits, o.ttl, o.wait)
	} else {
		l, err = cl.AcquirePermit(s.Context(), key, o.permits, o.ttl)
	}
	if err == nil && s.Context().Err() != nil {
		err = h.undoForGone(s, l)
	}
	h.took(s, err, l.Token, key)
	return grant{Lock: l}, err
}
