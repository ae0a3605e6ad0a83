package backend

import "github.com/redlockd/redlockd/quorum"

// The in-memory forms of the lock horizon's commands, as redis_horizon.go
// describes them. Every in-memory key has an expiry.

func (s *memOp) raiseHorizon() quorum.Reply {
	if e, ok := s.lookup(s.c.Key); ok && e.expires.Sub(s.now) >= s.c.TTL {
		return quorum.Reply{OK: true, TTL: e.expires.Sub(s.now)}
	}
	s.put(s.c.Key, "1", s.c.TTL)
	return quorum.Reply{OK: true, TTL: s.c.TTL}
}

func (s *memOp) readHorizon() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, TTL: e.expires.Sub(s.now)}
}
