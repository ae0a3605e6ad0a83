package commands

import "errors"

// lockShared: LOCK key ttl … SHARED.
func (h *Handler) lockShared(s *Session, key string, o lockOpts) (grant, error) {
	return grant{}, errors.New("LOCK … SHARED is not available yet")
}
