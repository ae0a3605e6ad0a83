// Package resptest is a plain RESP connection for tests that compare
// redlockd's replies with a real redis-server's byte for byte, below any
// client library.
package resptest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Conn is one raw connection; the test's cleanup closes it.
type Conn struct {
	t  testing.TB
	nc net.Conn
	// R reads the replies.
	R *bufio.Reader
}

// Dial connects to addr. Every read and write has a 20 s deadline, so a
// hung test fails instead of blocking.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, nc: nc, R: bufio.NewReader(nc)}
}

// Send writes args as one RESP array.
func (c *Conn) Send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		c.t.Fatal(err)
	}
}

// Line sends args and returns the first line of the reply, without CRLF.
func (c *Conn) Line(args ...string) string {
	c.t.Helper()
	c.Send(args...)
	l, err := c.R.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	return strings.TrimSuffix(l, "\r\n")
}
