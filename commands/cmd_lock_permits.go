package commands

import "errors"

// lockPermit: LOCK key ttl … PERMITS.
func (h *Handler) lockPermit(s *Session, key string, o lockOpts) (grant, error) {
	return grant{}, errors.New("LOCK … PERMITS is not available yet")
}
