// Package faultnode wraps a quorum node for tests that make it fail, make
// it slow, or count what it was asked. It is built on nodetest.Hooked,
// and lives apart from nodetest because it names commands as the backend
// package does (backend.KindName), which nodetest, used by backend's own
// tests, cannot import.
package faultnode

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// errLate is the reply to a command whose deadline came before its delay
// was over.
var errLate = fmt.Errorf("faultnode: no reply by the deadline: %w", context.DeadlineExceeded)

// Node is a quorum node whose commands can be failed (SetFault), held up
// (SetDelay) and counted (Calls). Its methods are safe for concurrent
// use. With neither a fault nor a delay set, and no delayed command still
// waiting, a command goes straight to the wrapped node, so a node that
// answers before Do returns still does.
type Node struct {
	quorum.Node

	mu    sync.Mutex
	fault error
	delay time.Duration
	calls map[string]int
	// tail is closed once the last delayed command given to Do, and every
	// one before it, has finished; nil before the first.
	tail chan struct{}
}

var _ quorum.Node = (*Node)(nil)

// Wrap returns n with no fault and no delay.
func Wrap(n quorum.Node) *Node {
	return &Node{Node: n, calls: make(map[string]int)}
}

// SetFault makes every following command fail with err, without reaching
// the node (after any delay set by SetDelay); nil restores normal
// service.
func (f *Node) SetFault(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = err
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
	f.mu.Lock()
	f.calls[backend.KindName(cmd.Kind)]++
	fault, delay := f.fault, f.delay
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
