package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// respConn is a client connection that speaks RESP by hand: these tests
// need a client that sends one command and then does not read, which no
// client library does.
type respConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &respConn{nc: nc, rd: bufio.NewReader(nc)}
}

func (c *respConn) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		t.Fatal(err)
	}
}

// line reads one reply line.
func (c *respConn) line(t *testing.T) string {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	s, err := c.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	return strings.TrimSuffix(s, "\r\n")
}

// bulk reads a bulk string reply ("" and false for a null).
func (c *respConn) bulk(t *testing.T) (string, bool) {
	t.Helper()
	head := c.line(t)
	if head == "$-1" {
		return "", false
	}
	if !strings.HasPrefix(head, "$") {
		t.Fatalf("reply %q, want a bulk string", head)
	}
	return c.line(t), true
}

// TestUnreadRepliesHoldNoRound: the reply of a command that a client sent
// alone is written by the goroutine whose backend reply decided its round,
// a backend connection's reader, which every other round on that backend
// waits for. A client that sends commands one at a time and reads none of
// the replies fills its socket: what the socket does not take must wait
// elsewhere, so other clients' rounds go on, and once the client reads it
// gets every reply, in order.
func TestUnreadRepliesHoldNoRound(t *testing.T) {
	// One backend: its connection's reader decides every round, so a
	// reader held up by one client's reply would hold up every other.
	// (With three, the two others would still make a majority.)
	rs := redistest.Start(t)
	node, err := backend.NewRedis(rs.Addr(), backend.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A node timeout far above the default's 50ms: a 100 KiB LOCK on a
	// loaded machine may take longer to go out, and a reader held up by
	// the stalled client would still fail every round below, only later.
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 2 * time.Second
	cluster, err := quorum.New([]quorum.Node{node}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cluster.Close()
		node.Close()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(commands.New(cluster, commands.Options{}), Options{WriteTimeout: time.Minute})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-srv.Ready()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	}()
	addr := ln.Addr().String()

	stalled := dialResp(t, addr)
	other := dialResp(t, addr)
	// A long token makes each LOCK reply long, so that the socket fills
	// after few commands.
	token := strings.Repeat("t", 100<<10)
	key := func(i int) string { return fmt.Sprintf("unread:%d", i) }
	// held reports whether the stalled client's i-th LOCK has run, asked
	// over the other connection until it has, for at most a while: a
	// command that has not run by then waits for the connection to read
	// it, behind a reply that the socket would not take.
	held := func(i int) bool {
		for range 400 {
			other.send(t, "GET", key(i))
			if v, ok := other.bulk(t); ok {
				if v != token+fmt.Sprint(i) {
					t.Fatalf("GET %s = %.20q…", key(i), v)
				}
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}
	sent, stuck := 0, false
	for sent < 500 && !stuck {
		stalled.send(t, "LOCK", key(sent), "60000", "TOKEN", token+fmt.Sprint(sent))
		sent++
		stuck = !held(sent - 1)
	}
	if !stuck {
		t.Fatalf("%d replies of %d bytes went unread and the connection still read on", sent, len(token))
	}
	// The other client's rounds are decided by the same backend reader.
	for j := range 50 {
		other.send(t, "SET", fmt.Sprintf("other:%d", j), "v", "NX", "PX", "60000")
		if r := other.line(t); r != "+OK" {
			t.Fatalf("SET other:%d = %q", j, r)
		}
	}
	// Now the stalled client reads: every reply, in order, the last
	// command's too.
	for i := range sent {
		if h := stalled.line(t); h != "*2" {
			t.Fatalf("reply %d of %d starts %q, want a grant", i, sent, h)
		}
		if tok, _ := stalled.bulk(t); tok != token+fmt.Sprint(i) {
			t.Fatalf("reply %d of %d holds token %.20q…", i, sent, tok)
		}
		if v := stalled.line(t); !strings.HasPrefix(v, ":") {
			t.Fatalf("reply %d of %d: validity %q", i, sent, v)
		}
	}
	// And the connection serves on.
	stalled.send(t, "PING")
	if r := stalled.line(t); r != "+PONG" {
		t.Fatalf("PING = %q", r)
	}
}
