package proxy

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// What redlockd sets the per-connection limits of Options to unless told
// otherwise (its --client-output-limit and --client-write-timeout).
const (
	DefaultMaxReplyBytes = 64 << 20
	DefaultWriteTimeout  = 60 * time.Second
)

// errReplyLimit closes a connection whose pending replies exceed
// Options.MaxReplyBytes.
var errReplyLimit = errors.New("proxy: client output limit reached")

// maxReplyBytes is the cap of Options.MaxReplyBytes; 0 is none.
func maxReplyBytes(n int) int { return max(n, 0) }

// writeTimeoutConn bounds how long a write may block. Replies are written
// synchronously on the connection's goroutine, so a client that stops
// reading blocks only that goroutine; the deadline bounds for how long.
// Once a write times out the connection is closed: a partly written reply
// leaves the stream unusable anyway.
//
// A write to a client that reads does not block, and setting a deadline
// on every write costs more than the write's own bookkeeping: on a TCP
// socket the write is first tried at once, and the deadline is set only
// for what the socket would not take.
type writeTimeoutConn struct {
	net.Conn
	timeout time.Duration
	raw     syscall.RawConn // nil: every write sets the deadline
	// rawWrite is c.writeRaw, made once: a closure per write would be an
	// allocation per reply. Writes are serialised by the connection's
	// write lock, so p and n can live here.
	rawWrite func(fd uintptr) bool
	p        []byte
	n        int
}

// withWriteTimeout wraps c, unless timeout is 0 (no bound).
func withWriteTimeout(c net.Conn, timeout time.Duration) net.Conn {
	if timeout <= 0 {
		return c
	}
	wc := &writeTimeoutConn{Conn: c, timeout: timeout}
	if tc, ok := c.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			wc.raw, wc.rawWrite = raw, wc.writeRaw
		}
	}
	return wc
}

func (c *writeTimeoutConn) Write(p []byte) (int, error) {
	n := 0
	if c.raw != nil {
		n = c.tryWrite(p)
		if n == len(p) {
			return n, nil
		}
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return n, err
	}
	m, err := c.Conn.Write(p[n:])
	return n + m, err
}

// tryWrite writes what the socket takes without waiting, and returns how
// much that was; anything else (a full buffer, an error) is left to the
// write with a deadline, which waits or reports it.
func (c *writeTimeoutConn) tryWrite(p []byte) int {
	c.p, c.n = p, 0
	c.raw.Write(c.rawWrite)
	n := c.n
	c.p, c.n = nil, 0
	return n
}

func (c *writeTimeoutConn) writeRaw(fd uintptr) bool {
	for c.n < len(c.p) {
		m, err := syscall.Write(int(fd), c.p[c.n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		c.n += m
	}
	return true // never wait here
}
