package embedded

import (
	"fmt"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// checkCmd refuses what no node should store: a command of no known kind or
// of a database outside 0 to quorum.DBs-1, a ttl <= 0 (a key without expiry, or PEXPIRE's delete), a negative mark.
func checkCmd(c *quorum.Cmd) error {
	if !backend.KnownKind(c.Kind) {
		return fmt.Errorf("backend: unknown command kind %d", c.Kind)
	}
	if c.DB < 0 || c.DB >= quorum.DBs {
		return fmt.Errorf("backend: %w: %d", backend.ErrBadDB, c.DB)
	}
	return backend.CheckArgs(c)
}

// memOp is one command running under the node's lock.
type memOp struct {
	m        *Memory
	c        quorum.Cmd
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
	quorum.Subscribe:   (*memOp).subscription,
	quorum.Unsubscribe: (*memOp).subscription,
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

// memRelease is a released key of database db.
type memRelease struct {
	db  int
	key string
}

// dropPhys deletes the node's key phys (memKey of a database and key),
// whatever database c.DB names (a script may have selected another); with
// notify, its release is announced, in its database, where waiters
// marked it.
func (s *memOp) dropPhys(phys string, notify bool) {
	delete(s.m.keys, phys)
	s.m.dropHash(phys)
	if !notify {
		return
	}
	db, key := memSplit(phys)
	if _, _, marked := s.m.lookup(memKey(db, backend.WaitKey(key)), s.now); marked {
		s.announce = append(s.announce, memRelease{db, key})
	}
}
