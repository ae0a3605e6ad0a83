package backend

import (
	"context"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
)

// healthConn carries the node's INFO looks, one at a time, on a connection
// of its own, dialed (with the handshake and the connect look) on first use
// and again after any failure.
type healthConn struct {
	cfg  *wire.Config
	busy sync.Mutex // one exchange at a time

	mu     sync.Mutex
	cur    *wire.Conn
	closed bool
}

// do sends one command and reads its reply within ctx; an error reply is
// returned as the error.
func (h *healthConn) do(ctx context.Context, args ...string) (wire.Reply, error) {
	h.busy.Lock()
	defer h.busy.Unlock()
	c, err := h.connect(ctx)
	if err != nil {
		return wire.Reply{}, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(wire.NoDeadlineBudget)
	}
	_ = c.NC.SetDeadline(dl)
	// A cancelled ctx (Close, a caller giving up) cuts the exchange short.
	stop := context.AfterFunc(ctx, func() { _ = c.NC.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err = c.Write(args...)
	var rep wire.Reply
	if err == nil {
		rep, err = c.Read()
	}
	if err != nil {
		h.drop(c)
		return wire.Reply{}, err
	}
	return rep, rep.Err()
}

// text is do for a command that answers a bulk string (INFO, CLUSTER
// NODES).
func (h *healthConn) text(ctx context.Context, args ...string) (string, error) {
	rep, err := h.do(ctx, args...)
	if err == nil && rep.Kind != '$' {
		return "", unexpected(rep)
	}
	return rep.Str, err
}

func (h *healthConn) connect(ctx context.Context) (*wire.Conn, error) {
	h.mu.Lock()
	c, closed := h.cur, h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case c != nil:
		return c, nil
	}
	nc, err := h.cfg.Open(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		nc.Close()
		return nil, ErrClosed
	}
	h.cur = &wire.Conn{NC: nc}
	return h.cur, nil
}

// drop closes c after a failure: the next exchange dials again.
func (h *healthConn) drop(c *wire.Conn) {
	h.mu.Lock()
	if h.cur == c {
		h.cur = nil
	}
	h.mu.Unlock()
	c.NC.Close()
}

// close ends the connection; an exchange in progress fails at once.
func (h *healthConn) close() {
	h.mu.Lock()
	c := h.cur
	h.cur, h.closed = nil, true
	h.mu.Unlock()
	if c != nil {
		c.NC.Close()
	}
}
