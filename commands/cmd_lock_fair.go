package commands

import "github.com/redlockd/redlockd/quorum"

// lockFair: LOCK key ttl … FAIR. With WAIT the client takes a place in the
// key's queue of waiters and is granted the lock in its turn; without it,
// it is a try-lock that succeeds only while nobody is queued. Once granted, a fair lock is a plain lock of its token:
// RENEW, UNLOCK, KEEPALIVE and FENCE treat it as one.
func (h *Handler) lockFair(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	var l quorum.Lock
	var err error
	if o.wait > 0 {
		l, err = cl.AcquireFair(s.Context(), key, o.token, o.ttl, o.wait)
	} else {
		l, err = cl.TryFair(s.Context(), key, o.token, o.ttl)
	}
	if err == nil && s.Context().Err() != nil {
		err = h.undoForGone(s, l)
	}
	h.took(s, err, o.token, key)
	return grant{Lock: l}, err
}
