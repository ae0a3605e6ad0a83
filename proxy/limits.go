package proxy

import (
	"errors"
	"net"
	"time"

	"github.com/redlockd/redlockd/internal/rawio"
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

// writeTimeoutConn bounds how long a write may block. A write that waits
// runs on a goroutine of the connection's own (its serving goroutine, or
// the one a reply written by a round's goroutine hands its rest to: see
// startAlone), so a client that stops reading blocks only that goroutine;
// the deadline bounds for how long.
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
	try     *tryWriter // nil: every write sets the deadline
}

// withWriteTimeout wraps c, unless timeout is 0 (no bound).
func withWriteTimeout(c net.Conn, timeout time.Duration) net.Conn {
	if timeout <= 0 {
		return c
	}
	return &writeTimeoutConn{Conn: c, timeout: timeout, try: newTryWriter(c)}
}

func (c *writeTimeoutConn) Write(p []byte) (int, error) {
	n := 0
	if c.try != nil {
		n = c.try.write(p)
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

// tryWriter writes to a TCP socket what it takes without waiting.
type tryWriter struct{ c *rawio.Conn }

// newTryWriter returns c's tryWriter: nil unless c is a raw TCP
// connection (seen through a writeTimeoutConn).
func newTryWriter(c net.Conn) *tryWriter {
	if wc, ok := c.(*writeTimeoutConn); ok {
		return wc.try
	}
	if rc, ok := c.(*rawio.Conn); ok {
		return &tryWriter{c: rc}
	}
	return nil
}

// write writes what the socket takes without waiting, and returns how
// much that was; anything else (a full buffer, an error) is left to a
// write that waits, which waits or reports it.
func (t *tryWriter) write(p []byte) int { return t.c.TryWrite(p) }
