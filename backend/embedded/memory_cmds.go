package embedded

import (
	"fmt"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// memCmd is a quorum.Cmd as the in-memory node runs it.
type memCmd struct{ quorum.Cmd }

// check refuses what no node should store: a command of no known kind or
// of a database outside 0 to quorum.DBs-1, a ttl <= 0 (a key without expiry, or PEXPIRE's delete), a negative mark.
func (c memCmd) check() error {
	if !backend.KnownKind(c.Kind) {
		return fmt.Errorf("backend: unknown command kind %d", c.Kind)
	}
	if c.DB < 0 || c.DB >= quorum.DBs {
		return fmt.Errorf("backend: %w: %d", backend.ErrBadDB, c.DB)
	}
	return backend.CheckArgs(&c.Cmd)
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

// memSteps are the kinds the node runs by a step of its own rather than
// by the command or script a Redis node runs: a client's script and its
// undo, and pub/sub.
var memSteps = map[quorum.CmdKind]func(*memOp) quorum.Reply{
	quorum.Eval:        (*memOp).eval,
	quorum.UndoEval:    (*memOp).undoEval,
	quorum.Subscribe:   (*memOp).subscribe,
	quorum.Unsubscribe: (*memOp).unsubscribe,
	quorum.Publish:     (*memOp).publish,
	quorum.ForgetEval:  (*memOp).forgetEval,
}

// exec runs the command: by its own step where the kind has one, else by
// the command or script a Redis node runs.
func (s *memOp) exec() quorum.Reply {
	if run := memSteps[s.c.Kind]; run != nil {
		return run(s)
	}
	return s.byBuild()
}

// lookup returns key's live entry.
func (s *memOp) lookup(key string) (entry, bool) {
	e, _, ok := s.m.lookup(memKey(s.c.DB, key), s.now)
	return e, ok
}

// del deletes key, announcing nothing.
func (s *memOp) del(key string) {
	k := memKey(s.c.DB, key)
	delete(s.m.keys, k)
	s.m.dropHash(k)
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

func (s *memOp) marked(key string) bool {
	_, ok := s.lookup(backend.WaitKey(key))
	return ok
}
