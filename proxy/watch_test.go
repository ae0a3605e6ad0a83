package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"
)

// TestWaitIsNotIdleness: the watch of a blocking LOCK … WAIT does not let
// the idle timeout (set before the command was read) close the waiting
// connection; it is served once the lock frees.
func TestWaitIsNotIdleness(t *testing.T) {
	ts := startServer(t, Options{IdleTimeout: 200 * time.Millisecond})
	holder := ts.dial(t)
	holder.send("LOCK k 60000 TOKEN h\r\n")
	holder.expect("*2\r\n$1\r\nh\r\n:")
	waiter := ts.dial(t)
	waiter.send("LOCK k 1000 WAIT 8000 TOKEN w\r\n")
	waitUntil(t, 10*time.Second, "the waiter to wait", func() bool { return ts.cluster.Waiters("k") == 1 })
	idle := ts.dial(t) // dialed once the waiter waits: closed before it would be
	idle.send("PING\r\n")
	idle.expect("+PONG\r\n")
	idle.expectEOF()
	release := ts.dial(t)
	release.send("UNLOCK k h\r\n")
	release.expect(":1\r\n")
	waiter.expect("*2\r\n$1\r\nw\r\n:")
	waiter.rd.ReadString('\n') // the validity
	waiter.send("PING\r\n")
	waiter.expect("+PONG\r\n")
}

// TestWaitHangUpOverTLS: a TLS client that hangs up during a wait gives
// its slot back at once, as a plain one does.
func TestWaitHangUpOverTLS(t *testing.T) {
	cert := selfSigned(t)
	ts := startServer(t, Options{MaxClients: 2, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", ts.addr, &tls.Config{InsecureSkipVerify: true}) // the test's own certificate
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder := dial()
	io.WriteString(holder, "LOCK k 60000 TOKEN h\r\n")
	if l, err := bufio.NewReader(holder).ReadString('\n'); err != nil || l != "*2\r\n" {
		t.Fatalf("holder's LOCK = %q, %v", l, err)
	}
	waiter := dial()
	io.WriteString(waiter, "LOCK k 1000 WAIT 60000\r\n")
	waitUntil(t, 10*time.Second, "the waiter to wait", func() bool { return ts.cluster.Waiters("k") == 1 })
	waiter.Close()
	waitUntil(t, 10*time.Second, "a new TLS client served", func() bool {
		c := dial()
		defer c.Close()
		io.WriteString(c, "PING\r\n")
		l, err := bufio.NewReader(c).ReadString('\n')
		return err == nil && strings.TrimSpace(l) == "+PONG"
	})
}
