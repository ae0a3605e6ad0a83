package backend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// memCmd is a quorum.Cmd as the in-memory node runs it.
type memCmd struct{ quorum.Cmd }

// holdsKey is where the hold count of Key lives. Only the owner commands
// need it, so it is not made for every command.
func (c memCmd) holdsKey() string { return quorum.HoldsKey(c.Key) }

// memNeed says which of a command's memNeed must be positive.
type memNeed uint8

const (
	memNeedTTL memNeed = 1 << iota
	memNeedAddLimit
)

// memKinds is the node's command table: the name Calls counts a kind
// under, the memNeed it needs, and its step. Every quorum.CmdKind has a
// row (TestMemoryKindTableComplete).
var memKinds = [...]struct {
	name string
	need memNeed
	run  func(*memOp) quorum.Reply
}{
	quorum.SetNX:            {"SetNX", memNeedTTL, (*memOp).setNX},
	quorum.Set:              {"Set", memNeedTTL, (*memOp).set},
	quorum.CompareAndDelete: {"CompareAndDelete", 0, (*memOp).compareAndDelete},
	quorum.CompareAndExtend: {"CompareAndExtend", memNeedTTL, (*memOp).compareAndExtend},
	quorum.Get:              {"Get", 0, (*memOp).get},
	quorum.Delete:           {"Delete", 0, (*memOp).delete},
	quorum.Expire:           {"Expire", memNeedTTL, (*memOp).expire},
	quorum.AddTTL:           {"CompareAndAddTTL", memNeedAddLimit, (*memOp).addTTL},
	quorum.ExtendOrSetNX:    {"ExtendOrSetNX", memNeedTTL, (*memOp).extendOrSetNX},
	quorum.SetNXAll:         {"SetNXAll", memNeedTTL, (*memOp).setNXAll},
	quorum.ExtendAll:        {"ExtendAll", memNeedTTL, (*memOp).extendAll},
	quorum.ReleaseEach:      {"ReleaseEach", 0, (*memOp).releaseEach},
	quorum.HoldOwner:        {"HoldOwner", memNeedTTL, (*memOp).holdOwner},
	quorum.UndoHold:         {"UndoHold", memNeedTTL, (*memOp).undoHold},
	quorum.Unhold:           {"Unhold", 0, (*memOp).unhold},
	quorum.ExtendHeld:       {"ExtendHeld", memNeedTTL, (*memOp).extendHeld},
	quorum.RestoreHeld:      {"RestoreHeld", memNeedTTL, (*memOp).restoreHeld},
	quorum.ReadFence:        {"ReadFence", 0, (*memOp).readFence},
	quorum.RaiseFence:       {"RaiseFence", memNeedTTL, (*memOp).raiseFence},
	quorum.Eval:             {"Eval", 0, (*memOp).eval},
	quorum.UndoEval:         {"UndoEval", 0, (*memOp).undoEval},
	quorum.RaiseHorizon:     {"RaiseHorizon", memNeedTTL, (*memOp).raiseHorizon},
	quorum.ReadHorizon:      {"ReadHorizon", 0, (*memOp).readHorizon},
	quorum.Subscribe:        {"Subscribe", 0, (*memOp).subscribe},
	quorum.Unsubscribe:      {"Unsubscribe", 0, (*memOp).unsubscribe},
	quorum.Publish:          {"Publish", 0, (*memOp).publish},
	quorum.CompareAndSwap:   {"CompareAndSwap", memNeedTTL, (*memOp).compareAndSwap},
	quorum.ReadPermits:      {"ReadPermits", 0, (*memOp).readPermits},
	quorum.AcquirePermit:    {"AcquirePermit", memNeedTTL, (*memOp).acquirePermit},
	quorum.ExtendPermit:     {"ExtendPermit", memNeedTTL, (*memOp).extendPermit},
	quorum.ReleasePermit:    {"ReleasePermit", 0, (*memOp).releasePermit},
	quorum.AcquireShared:    {"AcquireShared", memNeedTTL, (*memOp).acquireShared},
	quorum.ExtendShared:     {"ExtendShared", memNeedTTL, (*memOp).extendShared},
	quorum.ReleaseShared:    {"ReleaseShared", 0, (*memOp).releaseShared},
	quorum.ReadShared:       {"ReadShared", 0, (*memOp).readShared},
	quorum.FairTail:         {"FairTail", 0, (*memOp).fairTail},
	quorum.FairAcquire:      {"FairAcquire", memNeedTTL, (*memOp).fairAcquire},
	quorum.FairUndo:         {"FairUndo", 0, (*memOp).fairUndo},
	quorum.FairLeave:        {"FairLeave", 0, (*memOp).fairLeave},
	quorum.ForgetEval:       {"ForgetEval", 0, (*memOp).forgetEval},
}

// memKindName is the name Calls counts k under.
func memKindName(k quorum.CmdKind) string {
	if int(k) < len(memKinds) && memKinds[k].run != nil {
		return memKinds[k].name
	}
	return "kind " + strconv.Itoa(int(k))
}

// check refuses what no node should store: a command of no known kind or
// of a database outside 0 to quorum.DBs-1, a ttl <= 0 (a key without expiry, or PEXPIRE's delete), a negative mark.
func (c memCmd) check() error {
	if int(c.Kind) >= len(memKinds) || memKinds[c.Kind].run == nil {
		return fmt.Errorf("backend: unknown command kind %d", c.Kind)
	}
	if c.DB < 0 || c.DB >= quorum.DBs {
		return fmt.Errorf("backend: %w: %d", errBadDB, c.DB)
	}
	need := memKinds[c.Kind].need
	switch {
	case need&memNeedTTL != 0 && c.TTL <= 0,
		need&memNeedAddLimit != 0 && (c.Add <= 0 || c.Limit <= 0),
		c.Kind == quorum.SetNX && c.Add < 0:
		return ErrInvalidTTL
	}
	return nil
}

// memOp is one command running under the node's lock. Its steps name
// keys as the command does; lookup, store, del and drop put them in the
// command's database (memKey), so that no step can miss it.
type memOp struct {
	m        *Memory
	c        memCmd
	now      time.Time
	announce []memRelease // released keys to announce once the lock is let go
	// published are the deliveries of a Publish, made once the lock is
	// let go.
	published []memMessage
}

func (s *memOp) exec() quorum.Reply { return memKinds[s.c.Kind].run(s) }

// lookup returns key's live entry.
func (s *memOp) lookup(key string) (entry, bool) { return s.m.lookup(memKey(s.c.DB, key), s.now) }

// store writes key's entry.
func (s *memOp) store(key, token string, expires time.Time) {
	s.m.store(memKey(s.c.DB, key), token, expires)
}

// del deletes key, announcing nothing.
func (s *memOp) del(key string) {
	k := memKey(s.c.DB, key)
	delete(s.m.keys, k)
	s.m.dropHash(k)
}

// holds reports whether key is live and holds token.
func (s *memOp) holds(key, token string) bool {
	e, ok := s.lookup(key)
	return ok && e.token == token
}

// put stores key=token for ttl from now.
func (s *memOp) put(key, token string, ttl time.Duration) {
	s.store(key, token, s.now.Add(ttl))
}

// memRelease is a released key of database db.
type memRelease struct {
	db  int
	key string
}

// dropPhys is drop of the node's key phys (memKey of a database and key),
// in that database whatever c.DB is: a script may have selected another.
func (s *memOp) dropPhys(phys string, notify bool) {
	db, key := memSplit(phys)
	saved := s.c.DB
	s.c.DB = db
	s.drop(key, notify)
	s.c.DB = saved
}

// drop deletes key; with notify, a marked key's release is announced.
func (s *memOp) drop(key string, notify bool) {
	s.del(key)
	if notify {
		s.announceMarked(key)
	}
}

// announceMarked announces key's release where waiters marked it.
func (s *memOp) announceMarked(key string) {
	if s.marked(key) {
		s.announce = append(s.announce, memRelease{s.c.DB, key})
	}
}

// mark marks key as waited for until d from now, never shortening an
// earlier mark. Marks live at the Redis node's wait key.
func (s *memOp) mark(key string, d time.Duration) { s.markAt(waitKey(key), d) }

// markAt sets the mark k until d from now, never shortening an earlier one.
func (s *memOp) markAt(k string, d time.Duration) {
	until := s.now.Add(d)
	if e, ok := s.lookup(k); ok && !e.expires.Before(until) {
		return
	}
	s.store(k, "1", until)
}

func (s *memOp) marked(key string) bool {
	_, ok := s.lookup(waitKey(key))
	return ok
}

func (s *memOp) setNX() quorum.Reply {
	// Only a waiter's SET NX asks about the queue, as on a Redis node.
	queued := s.c.Add > 0 && s.fairQueued(s.c.Key)
	if _, held := s.lookup(s.c.Key); held || queued {
		if s.c.Add > 0 {
			s.mark(s.c.Key, s.c.Add)
			s.markWriter(s.c.Key, s.c.Add)
		}
		if queued {
			return quorum.Reply{N: quorum.FairQueued}
		}
		return quorum.Reply{}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	if s.c.Add > 0 {
		s.del(quorum.WriterKey(s.c.Key))
	}
	return quorum.Reply{OK: true}
}

func (s *memOp) set() quorum.Reply {
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true}
}

func (s *memOp) compareAndDelete() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	switch {
	case !ok:
		return quorum.Reply{N: -1}
	case e.token != s.c.Token:
		return quorum.Reply{N: 0}
	case s.c.Notify && s.fairQueued(s.c.Key):
		s.fairReserve(s.c.Key, s.c.Token)
		s.announceMarked(s.c.Key)
		return quorum.Reply{OK: true, N: 1}
	}
	s.drop(s.c.Key, s.c.Notify)
	return quorum.Reply{OK: true, N: 1}
}

func (s *memOp) compareAndExtend() quorum.Reply {
	if !s.holds(s.c.Key, s.c.Token) {
		return quorum.Reply{}
	}
	s.put(s.c.Key, s.c.Token, s.c.TTL)
	return quorum.Reply{OK: true}
}

// get answers a present key's remaining ttl, negative for a key a script
// left without expiry (the node stores no other).
func (s *memOp) get() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	switch {
	case !ok:
		return quorum.Reply{}
	case e.expires.Equal(memNoExpiry):
		return quorum.Reply{OK: true, Token: e.token, TTL: -1}
	}
	return quorum.Reply{OK: true, Token: e.token, TTL: e.expires.Sub(s.now)}
}

func (s *memOp) delete() quorum.Reply {
	if _, ok := s.lookup(s.c.Key); !ok {
		return quorum.Reply{}
	}
	s.drop(s.c.Key, s.c.Notify)
	return quorum.Reply{OK: true}
}

func (s *memOp) expire() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	s.put(s.c.Key, e.token, s.c.TTL)
	return quorum.Reply{OK: true}
}

func (s *memOp) addTTL() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok || e.token != s.c.Token {
		return quorum.Reply{}
	}
	ttl := min(e.expires.Sub(s.now)+s.c.Add, s.c.Limit)
	s.put(s.c.Key, e.token, ttl)
	return quorum.Reply{OK: true, TTL: ttl}
}

func (s *memOp) extendOrSetNX() quorum.Reply {
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

func (s *memOp) setNXAll() quorum.Reply {
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

func (s *memOp) extendAll() quorum.Reply {
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

func (s *memOp) releaseEach() quorum.Reply {
	each := make([]bool, len(s.c.Keys))
	for i, k := range s.c.Keys {
		if s.holds(k, s.c.Token) {
			s.drop(k, true)
			each[i] = true
		}
	}
	return quorum.Reply{Each: each}
}

func (s *memOp) readFence() quorum.Reply {
	e, ok := s.lookup(s.c.Key)
	if !ok {
		return quorum.Reply{}
	}
	v, err := parseFence(e.token)
	return quorum.Reply{N: v, Err: err}
}

// raiseFence overwrites a malformed counter, as a Redis node does:
// ReadFence refused it, so no fence was handed out from it.
func (s *memOp) raiseFence() quorum.Reply {
	var cur int64
	if e, ok := s.lookup(s.c.Key); ok {
		cur, _ = parseFence(e.token)
	}
	cur = max(cur, s.c.N)
	s.put(s.c.Key, strconv.FormatInt(cur, 10), s.c.TTL)
	return quorum.Reply{N: cur}
}
