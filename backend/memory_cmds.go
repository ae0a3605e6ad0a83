package backend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// command is a quorum.Cmd as the in-memory node runs it.
type command struct {
	quorum.Cmd
	// holds is where the hold count of Key lives: quorum.HoldsKey(Key) for
	// Do, the caller's own key for the legacy Reentrant methods.
	holds string
	// loud announces every release, marked or not: the legacy
	// ReleaseNotifier methods did, for a quorum that never marks.
	loud bool
}

// durations says which of a command's durations must be positive.
type durations uint8

const (
	needTTL durations = 1 << iota
	needAddLimit
)

// memoryKinds is the node's command table: the name Calls counts a kind
// under, the durations it needs, and its step. Every quorum.CmdKind has a
// row (TestMemoryKindTableComplete).
var memoryKinds = [...]struct {
	name string
	need durations
	run  func(*op) quorum.Reply
}{
	quorum.SetNX:            {"SetNX", needTTL, (*op).setNX},
	quorum.Set:              {"Set", needTTL, (*op).set},
	quorum.CompareAndDelete: {"CompareAndDelete", 0, (*op).compareAndDelete},
	quorum.CompareAndExtend: {"CompareAndExtend", needTTL, (*op).compareAndExtend},
	quorum.Get:              {"Get", 0, (*op).get},
	quorum.Delete:           {"Delete", 0, (*op).delete},
	quorum.Expire:           {"Expire", needTTL, (*op).expire},
	quorum.AddTTL:           {"CompareAndAddTTL", needAddLimit, (*op).addTTL},
	quorum.ExtendOrSetNX:    {"ExtendOrSetNX", needTTL, (*op).extendOrSetNX},
	quorum.SetNXAll:         {"SetNXAll", needTTL, (*op).setNXAll},
	quorum.ExtendAll:        {"ExtendAll", needTTL, (*op).extendAll},
	quorum.ReleaseEach:      {"ReleaseEach", 0, (*op).releaseEach},
	quorum.HoldOwner:        {"HoldOwner", needTTL, (*op).holdOwner},
	quorum.UndoHold:         {"UndoHold", needTTL, (*op).undoHold},
	quorum.Unhold:           {"Unhold", 0, (*op).unhold},
	quorum.ExtendHeld:       {"ExtendHeld", needTTL, (*op).extendHeld},
	quorum.RestoreHeld:      {"RestoreHeld", needTTL, (*op).restoreHeld},
	quorum.ReadFence:        {"ReadFence", 0, (*op).readFence},
	quorum.RaiseFence:       {"RaiseFence", needTTL, (*op).raiseFence},
}

// kindName is the name Calls counts k under.
func kindName(k quorum.CmdKind) string {
	if int(k) < len(memoryKinds) && memoryKinds[k].run != nil {
		return memoryKinds[k].name
	}
	return "kind " + strconv.Itoa(int(k))
}

// check refuses what no node should store: a command of no known kind, a
// ttl <= 0 (a key without expiry, or PEXPIRE's delete), a negative mark.
func (c command) check() error {
	if int(c.Kind) >= len(memoryKinds) || memoryKinds[c.Kind].run == nil {
		return fmt.Errorf("backend: unknown command kind %d", c.Kind)
	}
	need := memoryKinds[c.Kind].need
	switch {
	case need&needTTL != 0 && c.TTL <= 0,
		need&needAddLimit != 0 && (c.Add <= 0 || c.Limit <= 0),
		c.Kind == quorum.SetNX && c.Add < 0:
		return ErrInvalidTTL
	}
	return nil
}

// op is one command running under the node's lock.
type op struct {
	m        *Memory
	c        command
	now      time.Time
	announce []string // released keys to announce once the lock is let go
}

func (s *op) exec() quorum.Reply { return memoryKinds[s.c.Kind].run(s) }

// lookup returns key's live entry.
func (s *op) lookup(key string) (entry, bool) { return s.m.lookup(key, s.now) }

// holds reports whether key is live and holds token.
func (s *op) holds(key, token string) bool {
	e, ok := s.lookup(key)
	return ok && e.token == token
}

// put stores key=token for ttl from now.
func (s *op) put(key, token string, ttl time.Duration) {
	s.m.store(key, token, s.now.Add(ttl))
}

// drop deletes key; with notify, a marked key's release is announced (every
// release, for a loud legacy command).
func (s *op) drop(key string, notify bool) {
	delete(s.m.keys, key)
	if notify && (s.c.loud || s.marked(key)) {
		s.announce = append(s.announce, key)
	}
}

// mark marks key as waited for until d from now, never shortening an
// earlier mark. Marks live at the Redis node's wait key.
func (s *op) mark(key string, d time.Duration) {
	wk, until := waitKey(key), s.now.Add(d)
	if e, ok := s.lookup(wk); ok && !e.expires.Before(until) {
		return
	}
	s.m.store(wk, "1", until)
}

func (s *op) marked(key string) bool {
	_, ok := s.lookup(waitKey(key))
	return ok
}

func (s *op) setNX() quorum.Reply {
	if _, held := s.lookup(s.c.Key); held {
		if s.c.Add > 0 {
			s.mark(s.c.Key, s.c.Add)
		}
		return quorum.Reply{}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true}
}

func (s *op) set() quorum.Reply {
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true}
}

func (s *op) compareAndDelete() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	switch {
	case !ok:
		return quorum.Reply{N: -1}
	case e.token != s.c.Token:
		return quorum.Reply{N: 0}
	}
	s.drop(s.c.Key, s.c.Notify)
	return quorum.Reply{OK: true, N: 1}
}

func (s *op) compareAndExtend() quorum.Reply {
	if !s.holds(s.c.Key, s.c.Token) {
		return quorum.Reply{}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true}
}

// get answers a present key's remaining ttl, always > 0: the node never
// stores a key without an expiry.
func (s *op) get() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	return quorum.Reply{OK: true, Token: e.token, TTL: e.expires.Sub(s.now)}
}

func (s *op) delete() quorum.Reply {
	if _, ok := s.lookup(s.c.Key); !ok {
		return quorum.Reply{}
	}
	s.drop(s.c.Key, s.c.Notify)
	return quorum.Reply{OK: true}
}

func (s *op) expire() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	s.put(s.c.Key, e.token, s.c.TTL)
	return quorum.Reply{OK: true}
}

func (s *op) addTTL() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok || e.token != s.c.Token {
		return quorum.Reply{}
	}
	ttl := min(e.expires.Sub(s.now)+s.c.Add, s.c.Limit)
	s.put(s.c.Key, e.token, ttl)
	return quorum.Reply{OK: true, TTL: ttl}
}

func (s *op) extendOrSetNX() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	switch {
	case !ok:
		s.put(s.c.Key, s.c.Token, s.c.TTL)
		return quorum.Reply{OK: true, N: 2}
	case e.token == s.c.Token:
		s.put(s.c.Key, s.c.Token, s.c.TTL)
		return quorum.Reply{OK: true, N: 1}
	}
	return quorum.Reply{}
}

func (s *op) setNXAll() quorum.Reply {
	for _, k := range s.c.Keys {
		if _, held := s.lookup(k); held {
			return quorum.Reply{}
		}
	}
	for _, k := range s.c.Keys {
		s.put(k, s.c.Token, s.c.TTL)
	}
	return quorum.Reply{OK: true}
}

func (s *op) extendAll() quorum.Reply {
	for _, k := range s.c.Keys {
		if !s.holds(k, s.c.Token) {
			return quorum.Reply{}
		}
	}
	for _, k := range s.c.Keys {
		s.put(k, s.c.Token, s.c.TTL)
	}
	return quorum.Reply{OK: true}
}

func (s *op) releaseEach() quorum.Reply {
	each := make([]bool, len(s.c.Keys))
	for i, k := range s.c.Keys {
		if s.holds(k, s.c.Token) {
			s.drop(k, true)
			each[i] = true
		}
	}
	return quorum.Reply{Each: each}
}

func (s *op) readFence() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	v, err := parseFence(e.token)
	return quorum.Reply{N: v, Err: err}
}

// raiseFence overwrites a malformed counter, as a Redis node does:
// ReadFence refused it, so no fence was handed out from it.
func (s *op) raiseFence() quorum.Reply {
	var cur int64
	if e, ok := s.lookup(s.c.Key); ok {
		cur, _ = parseFence(e.token)
	}
	cur = max(cur, s.c.N)
	s.put(s.c.Key, strconv.FormatInt(cur, 10), s.c.TTL)
	return quorum.Reply{N: cur}
}
