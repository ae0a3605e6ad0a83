package commands

import "errors"

// lockFair: LOCK key ttl … FAIR.
func (h *Handler) lockFair(s *Session, key string, o lockOpts) (grant, error) {
	return grant{}, errors.New("LOCK … FAIR is not available yet")
}
