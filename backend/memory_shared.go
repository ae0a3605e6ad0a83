package backend

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// memReaders are the readers of one key held shared: token → expiry. A
// Redis node keeps them in a sorted set at quorum.SharedKey; the in-memory
// node keeps them beside its string map, by the memKey of the lock key, so
// that the lock key stays an ordinary entry (the marker) that every
// exclusive command finds present.
type memReaders map[string]time.Time

// liveReaders returns key's readers with the expired ones dropped, when
// key holds the marker; nil otherwise.
func (s *memOp) liveReaders(key string) memReaders {
	e, ok := s.lookup(key)
	if !ok || e.token != quorum.SharedMarker {
		return nil
	}
	rs := s.m.readers[memKey(s.c.DB, key)]
	for tok, exp := range rs {
		if !s.now.Before(exp) {
			delete(rs, tok)
		}
	}
	return rs
}

// settleReaders makes key follow its readers: the marker with the latest
// expiry among them, or, with none left, key deleted (announced where
// marked). It reports whether key was freed.
func (s *memOp) settleReaders(key string, rs memReaders) bool {
	var last time.Time
	for _, exp := range rs {
		if exp.After(last) {
			last = exp
		}
	}
	if len(rs) == 0 {
		delete(s.m.readers, memKey(s.c.DB, key))
		s.drop(key, true)
		return true
	}
	s.store(key, quorum.SharedMarker, last)
	return false
}

// markWriter marks key as waited for by a writer until d from now, never
// shortening an earlier mark.
func (s *memOp) markWriter(key string, d time.Duration) { s.markAt(quorum.WriterKey(key), d) }

func (s *memOp) acquireShared() quorum.Reply {
	k := s.c.Key
	_, held := s.lookup(k)
	rs := s.liveReaders(k)
	_, writer := s.lookup(quorum.WriterKey(k))
	if (held && len(rs) == 0) || writer {
		if s.c.Add > 0 {
			s.mark(k, s.c.Add)
		}
		return quorum.Reply{}
	}
	if !held {
		rs = memReaders{}
		if s.m.readers == nil {
			s.m.readers = make(map[string]memReaders)
		}
		s.m.readers[memKey(s.c.DB, k)] = rs
	}
	rs[s.c.Token] = s.now.Add(s.c.TTL)
	s.settleReaders(k, rs)
	return quorum.Reply{OK: true}
}

func (s *memOp) extendShared() quorum.Reply {
	k := s.c.Key
	if s.c.Token != quorum.SharedMarker && s.holds(k, s.c.Token) {
		s.put(k, s.c.Token, s.c.TTL)
		return quorum.Reply{OK: true}
	}
	rs := s.liveReaders(k)
	if _, ok := rs[s.c.Token]; !ok {
		return quorum.Reply{}
	}
	rs[s.c.Token] = s.now.Add(s.c.TTL)
	s.settleReaders(k, rs)
	return quorum.Reply{OK: true}
}

func (s *memOp) releaseShared() quorum.Reply {
	k := s.c.Key
	e, ok := s.lookup(k)
	switch {
	case !ok:
		return quorum.Reply{N: -1}
	case e.token == s.c.Token && e.token != quorum.SharedMarker:
		s.drop(k, true)
		return quorum.Reply{OK: true, N: 1}
	}
	rs := s.liveReaders(k)
	if _, ok := rs[s.c.Token]; !ok {
		return quorum.Reply{}
	}
	delete(rs, s.c.Token)
	s.settleReaders(k, rs)
	return quorum.Reply{OK: true, N: 1}
}

func (s *memOp) readShared() quorum.Reply {
	if e, ok := s.lookup(s.c.Key); !ok || e.token != quorum.SharedMarker {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, N: int64(len(s.liveReaders(s.c.Key)))}
}

// sweepReaders drops the readers of keys no longer held shared. The
// caller holds m.mu.
func (m *Memory) sweepReaders(now time.Time) {
	for k := range m.readers {
		if e, ok := m.lookup(k, now); !ok || e.token != quorum.SharedMarker {
			delete(m.readers, k)
		}
	}
}
