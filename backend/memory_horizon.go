package backend

import "github.com/redlockd/redlockd/quorum"

// The in-memory forms of the lock horizon's commands, as redis_horizon.go
// describes them. Every in-memory key has an expiry. The horizon lives in
// database 0 whatever database the command names, as on a redis-server.

func (s *memOp) raiseHorizon() quorum.Reply {
	s.c.DB = 0
	if e, ok := s.lookup(s.c.Key); ok && e.expires.Sub(s.now) >= s.c.TTL {
		return quorum.Reply{OK: true, TTL: e.expires.Sub(s.now)}
	}
	s.put(s.c.Key, "1", s.c.TTL)
	return quorum.Reply{OK: true, TTL: s.c.TTL}
}

func (s *memOp) readHorizon() quorum.Reply {
	s.c.DB = 0
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, TTL: e.expires.Sub(s.now)}
}
