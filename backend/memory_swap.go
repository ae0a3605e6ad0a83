package backend

import "github.com/redlockd/redlockd/quorum"

// compareAndSwap is quorum.CompareAndSwap: where Key holds Old, it holds
// Token for TTL from now.
func (s *memOp) compareAndSwap() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	switch {
	case !ok:
		return quorum.Reply{N: -1}
	case e.token != s.c.Old:
		return quorum.Reply{N: 0}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true, N: 1}
}
