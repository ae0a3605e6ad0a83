package commands

import "github.com/redlockd/redlockd/quorum"

// lockShared: LOCK key ttl … SHARED, a read lock with a reader token of
// its own (quorum.NewSharedToken): RENEW, UNLOCK, KEEPALIVE and FENCE
// reach the readers' commands through the token, in the quorum.
func (h *Handler) lockShared(s *Session, key string, o lockOpts) (grant, error) {
	cl := h.clusterOf(s)
	var l quorum.Lock
	var err error
	if o.wait > 0 {
		l, err = cl.AcquireSharedWait(s.Context(), key, o.ttl, o.wait)
	} else {
		l, err = cl.AcquireShared(s.Context(), key, o.ttl)
	}
	if err == nil && s.Context().Err() != nil {
		err = h.undoForGone(s, l)
	}
	h.took(s, err, l.Token, key)
	return grant{Lock: l}, err
}
