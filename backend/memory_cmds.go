package backend

import (
	"fmt"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// memCmd is a quorum.Cmd as the in-memory node runs it.
type memCmd struct{ quorum.Cmd }

// holdsKey is where the hold count of Key lives. Only the owner commands
// need it, so it is not made for every command.
func (c memCmd) holdsKey() string { return quorum.HoldsKey(c.Key) }

// check refuses what no node should store: a command of no known kind or
// of a database outside 0 to quorum.DBs-1, a ttl <= 0 (a key without expiry, or PEXPIRE's delete), a negative mark.
func (c memCmd) check() error {
	row, ok := kindOf(c.Kind)
	if !ok {
		return fmt.Errorf("backend: unknown command kind %d", c.Kind)
	}
	if c.DB < 0 || c.DB >= quorum.DBs {
		return fmt.Errorf("backend: %w: %d", errBadDB, c.DB)
	}
	return row.checkArgs(&c.Cmd)
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

// exec runs the command: by its own step where the kind has one, else by
// the command or script a Redis node runs.
func (s *memOp) exec() quorum.Reply {
	if run := kinds[s.c.Kind].mem; run != nil {
		return run(s)
	}
	return s.byBuild()
}

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
		return quorum.Reply{OK: true, N: 1} // as a waiter's SET NX script answers
	}
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

