package backend

import (
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The semaphore steps of the in-memory node, as the Redis node's scripts
// (redis_permits.go) run them.

// permitArgs reads what a permit's token names: its slot key and marker.
func (s *memOp) permitArgs() (slotKey, marker string, n int, ok bool) {
	n, slot, ok := quorum.ParsePermitToken(s.c.Token)
	if !ok {
		return "", "", 0, false
	}
	return quorum.PermitSlotKey(s.c.Key, slot), quorum.PermitsMarker(n), n, true
}

// readPermits is quorum.ReadPermits.
func (s *memOp) readPermits() quorum.Reply {
	n := int(s.c.N)
	if n < 1 || n > quorum.MaxPermits {
		return quorum.Reply{Err: errBadPermit}
	}
	out := quorum.Reply{OK: true, Value: &quorum.Value{Kind: quorum.ArrayValue, Elems: make([]quorum.Value, n)}}
	if e, ok := s.lookup(s.c.Key); ok {
		out.Token = e.token
		if s.c.Add > 0 {
			s.mark(s.c.Key, s.c.Add)
		}
	}
	prefix := quorum.PermitSlotPrefix(s.c.Key)
	for i := range n {
		if e, ok := s.lookup(prefix + strconv.Itoa(i)); ok {
			out.Value.Elems[i] = quorum.Value{Kind: quorum.BulkValue, Str: e.token}
		}
	}
	return out
}

// acquirePermit is quorum.AcquirePermit.
func (s *memOp) acquirePermit() quorum.Reply {
	sk, marker, _, ok := s.permitArgs()
	if !ok {
		return quorum.Reply{Err: errBadPermit}
	}
	e, held := s.lookup(s.c.Key)
	if _, taken := s.lookup(sk); (!held || e.token == marker) && !taken {
		s.put(sk, s.c.Token, s.c.TTL)
		s.raiseMarker(marker, s.c.TTL)
		return quorum.Reply{OK: true}
	}
	if s.c.Add > 0 {
		s.mark(s.c.Key, s.c.Add)
	}
	if m, isMarker := quorum.ParsePermitsMarker(e.token); held && isMarker && e.token != marker {
		return quorum.Reply{N: int64(m)}
	}
	return quorum.Reply{}
}

// raiseMarker stores the marker at Key with at least ttl left.
func (s *memOp) raiseMarker(marker string, ttl time.Duration) {
	until := s.now.Add(ttl)
	if e, ok := s.lookup(s.c.Key); ok && e.token == marker {
		until = later(e.expires, until)
	}
	s.store(s.c.Key, marker, until)
}

// extendPermit is quorum.ExtendPermit; a Key holding Token itself is a
// plain lock whose token only looks like a permit's.
func (s *memOp) extendPermit() quorum.Reply {
	sk, marker, _, ok := s.permitArgs()
	if !ok {
		return quorum.Reply{Err: errBadPermit}
	}
	if s.holds(sk, s.c.Token) {
		s.put(sk, s.c.Token, s.c.TTL)
		if e, held := s.lookup(s.c.Key); !held || e.token == marker {
			s.raiseMarker(marker, s.c.TTL)
		}
		return quorum.Reply{OK: true, N: 1}
	}
	if s.holds(s.c.Key, s.c.Token) {
		s.put(s.c.Key, s.c.Token, s.c.TTL)
		return quorum.Reply{OK: true, N: 1}
	}
	return quorum.Reply{}
}

// releasePermit is quorum.ReleasePermit.
func (s *memOp) releasePermit() quorum.Reply {
	sk, marker, n, ok := s.permitArgs()
	if !ok {
		return quorum.Reply{Err: errBadPermit}
	}
	slot, inSlot := s.lookup(sk)
	e, held := s.lookup(s.c.Key)
	switch {
	case inSlot && slot.token == s.c.Token:
		s.del(sk)
		if held && e.token == marker {
			s.fitMarker(e, n)
		}
	case held && e.token == s.c.Token:
		s.del(s.c.Key)
	case inSlot || held:
		return quorum.Reply{N: 0}
	default:
		return quorum.Reply{N: -1}
	}
	if s.c.Notify {
		s.announceMarked(s.c.Key)
	}
	return quorum.Reply{OK: true, N: 1}
}

// fitMarker makes the marker e at Key live as long as the longest of the
// n slots left, or deletes it when none is.
func (s *memOp) fitMarker(e entry, n int) {
	var top time.Time
	prefix := quorum.PermitSlotPrefix(s.c.Key)
	for i := range n {
		if sl, ok := s.lookup(prefix + strconv.Itoa(i)); ok {
			top = later(top, sl.expires)
		}
	}
	if top.IsZero() {
		s.del(s.c.Key)
		return
	}
	s.store(s.c.Key, e.token, top)
}
