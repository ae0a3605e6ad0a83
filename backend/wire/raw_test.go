package wire

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/rawio"
	"github.com/redlockd/redlockd/internal/resp"
)

// A line's TCP connection makes its socket calls raw (internal/rawio), and
// a reset still aborts it: the server reads a reset, not an orderly close,
// so nothing the line had written but the server had not taken can arrive
// after it (the undo of a failed try must never land behind a later grant).
func TestLineConnIsRawAndResetAborts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	readErr, gotCmd := make(chan error, 1), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			readErr <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		if _, err := c.Read(buf); err != nil {
			readErr <- err
			return
		}
		close(gotCmd)
		// No reply: the request's deadline passes and the line resets.
		_, err = c.Read(buf)
		readErr <- err
	}()
	var d net.Dialer
	m := NewMux(Config{Conns: 1, Timeout: time.Second, Dial: func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}})
	defer m.Close()
	l := m.lines[0]
	a := make(pairAnswer, 1)
	l.Submit(&Request{Buf: resp.AppendCommand(nil, []string{"ping"})}, time.Now().Add(200*time.Millisecond), a)
	select {
	case <-gotCmd:
	case err := <-readErr:
		t.Fatalf("the server read no command: %v", err)
	}
	l.mu.Lock()
	w := l.cur
	l.mu.Unlock()
	if w == nil {
		t.Fatal("no connection after a submit")
	}
	if _, ok := w.nc.(*rawio.Conn); !ok {
		t.Fatalf("the line's connection is a %T, not a *rawio.Conn", w.nc)
	}
	if res := awaitPair(t, a); res.err == nil {
		t.Fatalf("a request nobody answered got %+v", res)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("the server's read after the line's reset: %v, want a connection reset", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's connection stayed open after the line's reset")
	}
}
