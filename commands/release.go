package commands

import "sync"

// releaseEach is the release of several keys held by one token (a
// node-redlock release): each key goes through releaseToken, all at once,
// so each gets UNLOCK's bookkeeping. It counts the keys released from a
// majority; every key is tried, and the first key's error (a missing
// quorum) is returned.
func (h *Handler) releaseEach(s *Session, keys []string, token string) (int, error) {
	oks := make([]bool, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { oks[i], errs[i] = h.releaseToken(s, k, token) })
	}
	wg.Wait()
	n := 0
	for i, ok := range oks {
		if errs[i] != nil {
			return 0, errs[i]
		}
		n += int(b2i(ok))
	}
	return n, nil
}
