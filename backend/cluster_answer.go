package backend

import (
	"sync"

	"github.com/redlockd/redlockd/quorum"
)

// shardsAnswer combines the answers of every master to one horizon
// command into the node's answer, once the last is in.
type shardsAnswer struct {
	kind quorum.CmdKind
	rcv  quorum.Receiver

	mu   sync.Mutex
	left int
	out  quorum.Reply
	seen bool
}

// Receive implements quorum.Receiver.
func (a *shardsAnswer) Receive(rep quorum.Reply) {
	a.mu.Lock()
	a.add(rep)
	a.left--
	done, out := a.left == 0, a.out
	a.mu.Unlock()
	if done {
		out.Shard = "" // the answer of several shards
		a.rcv.Receive(out)
	}
}

// add folds one master's answer in: the first error wins; a raise is OK
// where all are, with the shortest ttl; a read is the longest horizon (a
// horizon without expiry, negative, is the longest).
func (a *shardsAnswer) add(rep quorum.Reply) {
	switch {
	case a.out.Err != nil:
	case rep.Err != nil:
		a.out = quorum.Reply{Err: rep.Err}
	case !a.seen:
		a.out = rep
	case a.kind == quorum.RaiseHorizon:
		a.out.OK = a.out.OK && rep.OK
		a.out.TTL = min(a.out.TTL, rep.TTL)
	default:
		a.out.OK = a.out.OK || rep.OK
		if a.out.TTL >= 0 && (rep.TTL < 0 || rep.TTL > a.out.TTL) {
			a.out.TTL = rep.TTL
		}
	}
	a.seen = true
}
