// Package nodetest wraps quorum nodes for tests: a command can be held up,
// failed, or have its reply changed, by a hook that sees every Cmd.
package nodetest

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Hooked is a node whose commands pass through hooks. Before runs on a
// goroutine of its own (it may block), under a context that ends at the
// command's deadline (a zero deadline is none); a non-nil error from it
// is the reply, and the node never sees the command. After runs on the
// reply the node gave and may change it. Either may be nil; a Hooked
// with neither is its node.
type Hooked struct {
	quorum.Node
	Before func(ctx context.Context, cmd quorum.Cmd) error
	After  func(cmd quorum.Cmd, rep *quorum.Reply)
}

var _ quorum.Node = (*Hooked)(nil)

// Do implements quorum.Node.
func (h *Hooked) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if h.After != nil {
		next := r
		r = quorum.ReceiverFunc(func(rep quorum.Reply) {
			h.After(cmd, &rep)
			next.Receive(rep)
		})
	}
	if h.Before == nil {
		h.Node.Do(deadline, cmd, r)
		return
	}
	go func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		if err := h.Before(ctx, cmd); err != nil {
			r.Receive(quorum.Reply{Err: err})
			return
		}
		h.Node.Do(deadline, cmd, r)
	}()
}
