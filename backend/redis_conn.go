package backend

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
)

// conn is one connection spoken to directly, one command at a time, with
// the multiplexer's own encoder and parser: the node's health look and its
// release subscription each have one, so that neither a slow INFO nor a
// subscribed connection ever sits in the lock commands' queue.
type conn struct {
	nc  net.Conn
	buf []byte // read but not yet parsed
	out []byte
}

func (c *conn) write(args ...string) error {
	c.out = resp.AppendCommand(c.out[:0], args)
	_, err := c.nc.Write(c.out)
	return err
}

// read returns the next reply. A read that times out keeps what it got, so
// the next read resumes where it stopped.
func (c *conn) read() (reply, error) {
	for {
		rep, n, err := parseReply(c.buf)
		if err != nil {
			return reply{}, err
		}
		if n > 0 {
			c.buf = c.buf[:copy(c.buf, c.buf[n:])]
			return rep, nil
		}
		if len(c.buf) == cap(c.buf) {
			c.buf = append(c.buf, make([]byte, max(4096, cap(c.buf)))...)[:len(c.buf)]
		}
		k, err := c.nc.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+k]
		if err != nil {
			return reply{}, err
		}
	}
}

// healthConn carries the node's INFO looks, one at a time, on a connection
// of its own, dialed (with the handshake and the connect look) on first use
// and again after any failure.
type healthConn struct {
	cfg  *muxConfig
	busy sync.Mutex // one exchange at a time

	mu     sync.Mutex
	cur    *conn
	closed bool
}

// do sends one command and reads its reply within ctx; an error reply is
// returned as the error.
func (h *healthConn) do(ctx context.Context, args ...string) (reply, error) {
	h.busy.Lock()
	defer h.busy.Unlock()
	c, err := h.connect(ctx)
	if err != nil {
		return reply{}, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(noDeadlineBudget)
	}
	_ = c.nc.SetDeadline(dl)
	// A cancelled ctx (Close, a caller giving up) cuts the exchange short.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err = c.write(args...)
	var rep reply
	if err == nil {
		rep, err = c.read()
	}
	if err != nil {
		h.drop(c)
		return reply{}, err
	}
	return rep, rep.err()
}

func (h *healthConn) connect(ctx context.Context) (*conn, error) {
	h.mu.Lock()
	c, closed := h.cur, h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case c != nil:
		return c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.timeout)
	defer cancel()
	nc, err := h.cfg.open(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		nc.Close()
		return nil, ErrClosed
	}
	h.cur = &conn{nc: nc}
	return h.cur, nil
}

// drop closes c after a failure: the next exchange dials again.
func (h *healthConn) drop(c *conn) {
	h.mu.Lock()
	if h.cur == c {
		h.cur = nil
	}
	h.mu.Unlock()
	c.nc.Close()
}

// close ends the connection; an exchange in progress fails at once.
func (h *healthConn) close() {
	h.mu.Lock()
	c := h.cur
	h.cur, h.closed = nil, true
	h.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}
