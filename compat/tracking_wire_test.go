package compat

import (
	"bufio"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wireConn is a raw RESP connection for the tracking tests that look at
// the order of replies and pushes: it writes commands as they are given
// (several in one write) and reads one value at a time, a RESP3 push
// rendered as ">[…]".
type wireConn struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

// wireTimeout bounds every read: what a test waits for arrives well
// within it, or the test fails.
const wireTimeout = 10 * time.Second

func dialWire(t testing.TB, addr string) *wireConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wireConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// send writes cmds in one write.
func (c *wireConn) send(cmds ...[]string) {
	c.t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
		for _, a := range args {
			b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
		}
	}
	if _, err := c.nc.Write([]byte(b.String())); err != nil {
		c.t.Fatal(err)
	}
}

// do sends one command and returns the next value read (its reply, where
// no push can come first).
func (c *wireConn) do(args ...string) string {
	c.t.Helper()
	c.send(args)
	return c.read()
}

// read returns the next value, within wireTimeout: a bulk string as its
// text ("" quoted), a null as "nil", an aggregate as "*[a b]" (">[…]" for a push,
// "%[k v …]" for a map), anything else as its line.
func (c *wireConn) read() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(wireTimeout))
	v, err := c.value()
	if err != nil {
		c.t.Fatalf("reading from %s: %v", c.nc.RemoteAddr(), err)
	}
	return v
}

func (c *wireConn) value() (string, error) {
	l, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	l = strings.TrimSuffix(l, "\r\n")
	if l == "" {
		return "", nil
	}
	switch l[0] {
	case '$', '=':
		n, _ := strconv.Atoi(l[1:])
		if n < 0 {
			return "nil", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return "", err
		}
		if n == 0 {
			return `""`, nil
		}
		return string(b[:n]), nil
	case '*', '>', '%', '~':
		n, _ := strconv.Atoi(l[1:])
		if n < 0 {
			return "nil", nil
		}
		if l[0] == '%' {
			n *= 2
		}
		parts := make([]string, n)
		for i := range parts {
			if parts[i], err = c.value(); err != nil {
				return "", err
			}
		}
		return string(l[0]) + "[" + strings.Join(parts, " ") + "]", nil
	case '_':
		return "nil", nil
	}
	return l, nil
}

// readUntil reads values until one satisfies ok, and returns them all.
func (c *wireConn) readUntil(ok func(string) bool) []string {
	c.t.Helper()
	seen, err := c.until(ok)
	if err != nil {
		c.t.Fatalf("reading from %s after %q: %v", c.nc.RemoteAddr(), seen, err)
	}
	return seen
}

// until is readUntil for a goroutine other than the test's: it returns
// the error instead, each read bounded by wireTimeout.
func (c *wireConn) until(ok func(string) bool) ([]string, error) {
	var seen []string
	for {
		c.nc.SetReadDeadline(time.Now().Add(wireTimeout))
		v, err := c.value()
		if err != nil {
			return seen, err
		}
		seen = append(seen, v)
		if ok(v) {
			return seen, nil
		}
	}
}

// isInvalidation reports whether v is a RESP3 invalidation push that
// names key (as read: ">[invalidate *[k1 k2]]").
func isInvalidation(v, key string) bool {
	keys, ok := strings.CutPrefix(v, ">[invalidate *[")
	if !ok {
		return false
	}
	return slices.Contains(strings.Fields(strings.TrimSuffix(keys, "]]")), key)
}
