// Package faultnode wraps a quorum node for tests that make it fail, make
// it slow, or count what it was asked. It is built on nodetest.Hooked,
// and lives apart from nodetest because it names commands as the backend
// package does (backend.KindName), which nodetest, used by backend's own
// tests, cannot import.
package faultnode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// errLate is the reply to a command whose deadline came before its delay
// was over.
var errLate = fmt.Errorf("faultnode: no reply by the deadline: %w", context.DeadlineExceeded)

// ErrAnswerNo is a fault (for SetFault and SetOpFault) under which a command
// answers "no" without reaching the node: a reply with neither OK nor an
// error, as a node that refused it would give.
var ErrAnswerNo = errors.New("faultnode: answers no")

// ReplyLost returns a fault (for SetFault and SetOpFault) under which a
// command reaches the node and runs there, and then its reply is lost:
// what arrives instead is an error that wraps err.
func ReplyLost(err error) error { return &lostReply{err} }

type lostReply struct{ err error }

func (l *lostReply) Error() string { return "faultnode: reply lost: " + l.err.Error() }
func (l *lostReply) Unwrap() error { return l.err }

// Node is a quorum node whose commands can be failed (SetFault,
// SetOpFault), held up (SetDelay, SetOpDelay), counted (Calls, Answered,
// WaitAnswered) and watched (OnReply). Its methods are safe for
// concurrent use. With neither a fault nor a delay set, and no delayed
// command still waiting, a command goes straight to the wrapped node, so
// a node that answers before Do returns still does.
type Node struct {
	quorum.Node

	mu       sync.Mutex
	fault    error
	delay    time.Duration
	opFaults map[string]error
	opDelays map[string]time.Duration
	opStuck  map[string]<-chan struct{}
	calls    map[string]int
	answered map[string]int
	// more is closed, and replaced, whenever a command is answered.
	more    chan struct{}
	onReply func(cmd quorum.Cmd, rep quorum.Reply)
	// tail is closed once the last delayed command given to Do, and every
	// one before it, has finished; nil before the first.
	tail chan struct{}
}

var _ quorum.Node = (*Node)(nil)

// Wrap returns n with no fault and no delay.
func Wrap(n quorum.Node) *Node {
	return &Node{
		Node: n, calls: make(map[string]int), answered: make(map[string]int),
		opFaults: make(map[string]error), opDelays: make(map[string]time.Duration),
		opStuck: make(map[string]<-chan struct{}), more: make(chan struct{}),
	}
}

// SetFault makes every following command fail with err, without reaching
// the node (after any delay set by SetDelay); nil restores normal
// service. ErrAnswerNo makes them answer "no" instead, and ReplyLost(err)
// lets them run on the node and loses their replies.
func (f *Node) SetFault(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = err
}

// SetOpFault is SetFault for the commands that Calls names op alone: it
// overrides SetFault's fault for them, and nil ends the override (they
// then follow SetFault again).
func (f *Node) SetOpFault(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.opFaults, op)
		return
	}
	f.opFaults[op] = err
}

// SetOpDelay holds up the commands that Calls names op for d (0 ends
// it), each apart from the others: unlike SetDelay's, such a command does
// not wait in line, so a command given after it may reach the node first,
// as over another connection. It replaces SetDelay for those commands,
// and fails at its deadline if that comes first (the node then never sees
// it); a fault set for it applies once d is over.
func (f *Node) SetOpDelay(op string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.opDelays, op)
		return
	}
	f.opDelays[op] = d
}

// SetOpStuck holds the commands that Calls names op, from the next one
// on, until gate is closed, as a server that stalled holds the writes it
// was sent: while gate is open such a command fails at its deadline (as
// a late one does), and once gate closes it reaches the node all the
// same, whether or not it failed; the node's reply to one that failed
// goes nowhere. A command whose gate closes before its deadline is
// answered as the node answers it. It takes the place of any fault and
// delay set for those commands; a nil gate ends it (commands already
// held still wait for their gate).
func (f *Node) SetOpStuck(op string, gate <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gate == nil {
		delete(f.opStuck, op)
		return
	}
	f.opStuck[op] = gate
}

// OnReply has fn called with every command's reply, a failed one
// included, before the reply is passed on (so before whoever gave the
// command sees it); nil removes it. fn must not block.
func (f *Node) OnReply(fn func(cmd quorum.Cmd, rep quorum.Reply)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onReply = fn
}

// Answered reports how many of the commands that Calls names op have been
// answered, failed ones included.
func (f *Node) Answered(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered[op]
}

// WaitAnswered waits until n commands that Calls names op have been
// answered, and fails t if that takes longer than a generous timeout
// (which only keeps a test from hanging).
func (f *Node) WaitAnswered(t testing.TB, op string, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		got, more := f.answered[op], f.more
		f.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-more:
		case <-timeout.C:
			t.Fatalf("%s: %s answered %d times, want %d", f.Name(), op, got, n)
		}
	}
}

// SetDelay makes every following command answer after d, from another
// goroutine, or fail at its deadline if that comes first (the node then
// never sees it); 0 removes the delay. Delayed commands reach the node in
// the order they were given, each once the one before has been answered,
// so one may wait longer behind an earlier, longer delay, and a command
// given after the delay is removed still waits for those before it.
func (f *Node) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// Calls reports how many times op was asked of the node, counting calls
// that failed or never reached it. op is the name backend.KindName gives
// the command kind: the quorum.Node method of old of the same name
// ("SetNX", "CompareAndDelete", "HoldOwner"…), with quorum.AddTTL counted
// as "CompareAndAddTTL".
func (f *Node) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Do implements quorum.Node. A zero deadline is none.
func (f *Node) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	op := backend.KindName(cmd.Kind)
	f.mu.Lock()
	f.calls[op]++
	fault, delay := f.fault, f.delay
	if err, ok := f.opFaults[op]; ok {
		fault = err
	}
	opDelay := f.opDelays[op]
	var lost *lostReply
	if errors.As(fault, &lost) {
		fault = nil // the node runs the command; answer loses its reply
	}
	if gate, ok := f.opStuck[op]; ok {
		r = f.answer(op, cmd, nil, f.onReply, r)
		f.mu.Unlock()
		f.doStuck(deadline, gate, cmd, r)
		return
	}
	r = f.answer(op, cmd, lost, f.onReply, r)
	if opDelay > 0 {
		f.mu.Unlock()
		f.doApart(deadline, opDelay, fault, cmd, r)
		return
	}
	waiting := f.tail != nil && !closed(f.tail)
	if fault == nil && delay <= 0 && !waiting {
		f.mu.Unlock()
		f.Node.Do(deadline, cmd, r)
		return
	}
	left := time.Duration(math.MaxInt64)
	if !deadline.IsZero() {
		left = time.Until(deadline)
	}
	switch {
	case left <= 0:
		f.mu.Unlock()
		r.Receive(quorum.Reply{Err: errLate})
		return
	case left < delay:
		// It would answer too late: it fails at its deadline, and takes
		// no place in the line of delayed commands.
		f.mu.Unlock()
		time.AfterFunc(left, func() { r.Receive(quorum.Reply{Err: errLate}) })
		return
	case delay <= 0 && !waiting:
		f.mu.Unlock()
		r.Receive(quorum.Reply{Err: fault})
		return
	}
	w := &wait{prev: f.tail, done: make(chan struct{}), due: time.Now().Add(delay), fault: fault}
	f.tail = w.done
	f.mu.Unlock()
	h := nodetest.Hooked{Node: f.Node, Before: w.before}
	h.Do(deadline, cmd, quorum.ReceiverFunc(func(rep quorum.Reply) {
		r.Receive(rep)
		if w.ran {
			close(w.done)
		}
	}))
}

// answer is the receiver that counts the reply to cmd (named op), has
// OnReply's fn see it, and passes it on to r: as the node gave it, lost
// (ReplyLost: an error) where lost is set, or "no" for ErrAnswerNo.
// f.mu is held.
func (f *Node) answer(op string, cmd quorum.Cmd, lost *lostReply, fn func(quorum.Cmd, quorum.Reply), r quorum.Receiver) quorum.Receiver {
	return quorum.ReceiverFunc(func(rep quorum.Reply) {
		switch {
		case lost != nil:
			rep = quorum.Reply{Err: lost}
		case errors.Is(rep.Err, ErrAnswerNo):
			rep = quorum.Reply{}
		}
		f.mu.Lock()
		f.answered[op]++
		close(f.more)
		f.more = make(chan struct{})
		f.mu.Unlock()
		if fn != nil {
			fn(cmd, rep)
		}
		r.Receive(rep)
	})
}

// doApart gives cmd to the node after delay, from a goroutine of its own
// and out of line, or fails it with fault then; at its deadline, if that
// comes first, it fails late.
func (f *Node) doApart(deadline time.Time, delay time.Duration, fault error, cmd quorum.Cmd, r quorum.Receiver) {
	h := nodetest.Hooked{Node: f.Node, Before: func(ctx context.Context, _ quorum.Cmd) error {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			return fault
		case <-ctx.Done():
			return errLate
		}
	}}
	h.Do(deadline, cmd, r)
}

// doStuck gives cmd to the node once gate is closed, and answers r with
// the node's reply if that comes by deadline, else with a late error at
// deadline (a zero deadline is none).
func (f *Node) doStuck(deadline time.Time, gate <-chan struct{}, cmd quorum.Cmd, r quorum.Receiver) {
	var once sync.Once
	reply := func(rep quorum.Reply) { once.Do(func() { r.Receive(rep) }) }
	if !deadline.IsZero() {
		time.AfterFunc(time.Until(deadline), func() { reply(quorum.Reply{Err: errLate}) })
	}
	go func() {
		<-gate
		f.Node.Do(time.Time{}, cmd, quorum.ReceiverFunc(reply))
	}()
}

// wait is one delayed command's place in line. done is closed once it
// and every command before it have finished: when the node has answered
// it, or when it gave up and prev is closed.
type wait struct {
	prev  chan struct{} // the command before's done; nil for none
	done  chan struct{}
	due   time.Time
	fault error
	ran   bool // the node was given the command; set before it is
}

// before is the command's nodetest.Hooked.Before: it waits for the
// command before to finish, then for due, and gives up at ctx's end
// (the command's deadline).
func (w *wait) before(ctx context.Context, _ quorum.Cmd) error {
	if w.prev != nil {
		select {
		case <-w.prev:
		case <-ctx.Done():
			// The commands after this one must still wait for those
			// before it.
			go func() {
				<-w.prev
				close(w.done)
			}()
			return errLate
		}
	}
	t := time.NewTimer(time.Until(w.due))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		close(w.done)
		return errLate
	}
	if w.fault != nil {
		close(w.done)
		return w.fault
	}
	w.ran = true
	return nil
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
