package backend

import (
	"strings"

	"github.com/redlockd/redlockd/quorum"
)

// The reentrant-lock steps of the in-memory node. Hold counts and marks
// are entries like any other, stored as text the way a Redis node stores
// them.

// The marks UndoHold leaves, as the Redis node's scripts do: undoneMark
// once a round is undone; keepMark+token when it was undone before it
// arrived while token was granted (it may add a hold to token only).
const (
	undoneMark = "-"
	keepMark   = "?"
)

// holdOwner is quorum.HoldOwner.
func (s *memOp) holdOwner() quorum.Reply {
	e, live := s.lookup(s.c.Key)
	if mk, marked := s.lookup(s.c.Mark); marked {
		only, keepOnly := strings.CutPrefix(mk.token, keepMark)
		switch {
		case keepOnly && (!live || e.token != only):
			return quorum.Reply{} // undone; the granted token is gone
		case keepOnly:
			// undone before it came, but the hold goes to the granted token
		case mk.token == undoneMark || !live || e.token != mk.token:
			return quorum.Reply{}
		default: // a repeat
			return quorum.Reply{OK: true, Token: e.token, N: s.holdsOf(e.token)}
		}
	}
	switch {
	case !live:
		e = entry{token: s.c.Token, expires: s.now.Add(s.c.TTL)}
	case strings.HasPrefix(e.token, s.c.Prefix):
		e.expires = later(e.expires, s.now.Add(s.c.TTL))
	default:
		return quorum.Reply{}
	}
	n := int64(1)
	if live {
		n = s.holdsOf(e.token) + 1
	}
	s.store(s.c.Key, e.token, e.expires)
	s.store(s.c.holdsKey(), quorum.FormatHolds(e.token, n), e.expires)
	s.put(s.c.Mark, e.token, s.c.TTL)
	return quorum.Reply{OK: true, Token: e.token, N: n}
}

// undoHold is quorum.UndoHold; Token is the granted token to keep. N is
// the holds left where a hold was taken back (0: the lock was deleted).
func (s *memOp) undoHold() quorum.Reply {
	mk, marked := s.lookup(s.c.Mark)
	keep := s.c.Token
	switch {
	case marked && (mk.token == undoneMark || mk.token == keep || strings.HasPrefix(mk.token, keepMark)):
		return quorum.Reply{}
	case !marked && keep != "":
		s.put(s.c.Mark, keepMark+keep, s.c.TTL)
		return quorum.Reply{}
	}
	s.put(s.c.Mark, undoneMark, s.c.TTL)
	if !marked {
		return quorum.Reply{}
	}
	e, live := s.lookup(s.c.Key)
	if !live || e.token != mk.token {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, N: s.dropHold(e)}
}

// dropHold takes one hold of e (Key's live entry) and deletes the lock
// when none is left, announcing it. It returns the holds left.
func (s *memOp) dropHold(e entry) int64 {
	n := s.holdsOf(e.token) - 1
	if n <= 0 {
		s.del(s.c.holdsKey())
		s.drop(s.c.Key, true)
		return 0
	}
	s.store(s.c.holdsKey(), quorum.FormatHolds(e.token, n), e.expires)
	return n
}

// unhold is quorum.Unhold.
func (s *memOp) unhold() quorum.Reply {
	e, live := s.lookup(s.c.Key)
	if !live || e.token != s.c.Token {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, N: s.dropHold(e)}
}

// extendHeld is quorum.ExtendHeld: never shorter, as another hold may
// have been granted more.
func (s *memOp) extendHeld() quorum.Reply {
	e, live := s.lookup(s.c.Key)
	if !live || e.token != s.c.Token {
		return quorum.Reply{}
	}
	until := s.now.Add(s.c.TTL)
	s.store(s.c.Key, e.token, later(e.expires, until))
	hk := s.c.holdsKey()
	if h, ok := s.lookup(hk); ok {
		s.store(hk, h.token, later(h.expires, until))
	}
	return quorum.Reply{OK: true}
}

// restoreHeld is quorum.RestoreHeld. With one hold it stores no count
// (none is one hold) and drops a stale one.
func (s *memOp) restoreHeld() quorum.Reply {
	if _, live := s.lookup(s.c.Key); live {
		return quorum.Reply{}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	if s.c.N > 1 {
		s.put(s.c.holdsKey(), quorum.FormatHolds(s.c.Token, s.c.N), s.c.TTL)
	} else {
		s.del(s.c.holdsKey())
	}
	return quorum.Reply{OK: true}
}

// holdsOf reads token's hold count; none, or one of another token, is 1.
func (s *memOp) holdsOf(token string) int64 {
	if h, ok := s.lookup(s.c.holdsKey()); ok {
		if tok, n, ok := quorum.ParseHolds(h.token); ok && tok == token {
			return n
		}
	}
	return 1
}
