package embedded

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// A client's script (quorum.Eval) may run for as long as its deadline
// allows, and a round gives its nodes their commands one after the other
// (the quorum's launch): a node that ran the script before Do returned
// would start the next node's run only once its own had ended, each
// eating into the one deadline they share. So Do hands a script to the
// node's line (memLine), which a goroutine of the node's runs, and
// returns at once; the native kinds, which take microseconds, still run
// inline, before Do returns, while nothing waits in the line.
//
// The line keeps the order Do was called in: while it holds anything (a
// script running, or any command waiting), every command, native or not,
// joins it, and it runs them one at a time, in turn. So a command never
// overtakes an earlier one given to the node, whatever its key: a native
// release never overtakes the script that took its lock, nor a script
// the SET before it. A command given once the line is empty again runs
// inline: the ones before it have run (their replies may still be on
// their way: the order is the commands', as Node.Do promises, not their
// replies').
//
// A command that waits in the line behind a script is answered at its own
// deadline, late, if it has not run by then (the script ahead may have a
// later one); it then does not run at all.

// memLine is a node's line of commands that run off the caller's
// goroutine.
type memLine struct {
	// busy: the line holds a command, running or waiting. Do reads it
	// without mu, on every native command; it is written under mu.
	busy atomic.Bool

	mu sync.Mutex
	// cmds[head:] are the commands in line, cmds[head] the one running; a
	// goroutine runs them while there are any (see work).
	cmds []*memLined
	head int
}

// memLined is one command in a node's line.
type memLined struct {
	deadline time.Time
	cmd      quorum.Cmd
	r        quorum.Receiver
	// taken: the command was answered, or is being run (it is answered
	// once, by whichever of the line and its timer takes it first).
	taken atomic.Bool
	// timer answers a command still waiting at its deadline; nil for one
	// that runs at once, or has no deadline.
	timer *time.Timer
}

// runsApart says whether a command of kind runs in the node's line even
// when it is empty: a client's script, whose run may be long.
func runsApart(kind quorum.CmdKind) bool { return kind == quorum.Eval }

// enqueue puts cmd in the node's line, starting the line's goroutine if
// it is idle. A native command (not runsApart) that finds the line empty
// runs inline instead, as Do runs it when the line is not busy.
func (m *Memory) enqueue(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	l := &m.line
	l.mu.Lock()
	empty := l.head == len(l.cmds)
	if empty && !runsApart(cmd.Kind) {
		// The line emptied since Do looked: what was in it has run.
		l.mu.Unlock()
		r.Receive(m.run(deadline, cmd))
		return
	}
	c := &memLined{deadline: deadline, cmd: cmd, r: r}
	if !empty && !deadline.IsZero() {
		c.timer = time.AfterFunc(time.Until(deadline), c.late)
	}
	l.cmds = append(l.cmds, c)
	l.busy.Store(true)
	l.mu.Unlock()
	if empty {
		go m.work()
	}
}

// work runs the line, one command at a time, until it is empty. A
// command leaves the line once it has run, before its reply is handed
// over: what is given to the node from then on (by the receiver too) may
// run inline.
func (m *Memory) work() {
	l := &m.line
	for {
		l.mu.Lock()
		c := l.cmds[l.head]
		l.mu.Unlock()
		rep, answer := c.run(m)
		l.mu.Lock()
		l.cmds[l.head] = nil
		l.head++
		more := l.head < len(l.cmds)
		switch {
		case !more:
			l.cmds, l.head = l.cmds[:0], 0
			l.busy.Store(false)
		case l.head >= 64 && 2*l.head >= len(l.cmds):
			// A line that never empties reuses what it ran through.
			n := copy(l.cmds, l.cmds[l.head:])
			clear(l.cmds[n:])
			l.cmds, l.head = l.cmds[:n], 0
		}
		l.mu.Unlock()
		if answer {
			c.r.Receive(rep)
		}
		if !more {
			return
		}
	}
}

// run runs c and returns its reply, unless its timer answered it already
// (answer false); past its deadline it fails without running, as Do's
// command does.
func (c *memLined) run(m *Memory) (rep quorum.Reply, answer bool) {
	if !c.taken.CompareAndSwap(false, true) {
		return quorum.Reply{}, false
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		return quorum.Reply{Err: errMemLate}, true
	}
	return m.run(c.deadline, c.cmd), true
}

// late answers c at its deadline, while it still waits in line.
func (c *memLined) late() {
	if c.taken.CompareAndSwap(false, true) {
		c.r.Receive(quorum.Reply{Err: errMemLate})
	}
}
