package proxy

import (
	"errors"
	"net"
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

// writeTimeoutConn puts a deadline on every write. Replies are written
// synchronously on the connection's goroutine, so a client that stops
// reading blocks only that goroutine; the deadline bounds for how long.
// Once a write times out the connection is closed: a partly written reply
// leaves the stream unusable anyway.
type writeTimeoutConn struct {
	net.Conn
	timeout time.Duration
}

// withWriteTimeout wraps c, unless timeout is 0 (no bound).
func withWriteTimeout(c net.Conn, timeout time.Duration) net.Conn {
	if timeout <= 0 {
		return c
	}
	return &writeTimeoutConn{Conn: c, timeout: timeout}
}

func (c *writeTimeoutConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}
