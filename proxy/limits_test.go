package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// waitUntil polls an external condition: the server gives no signal for
// a connection it closed or a goroutine that ended.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleTimeout: a connection that sends nothing is closed after the
// timeout; one whose command runs longer than the timeout is not.
func TestIdleTimeout(t *testing.T) {
	gates, nodes := gateNodes()
	ts := startServer(t, Options{IdleTimeout: 200 * time.Millisecond}, nodes...)
	busy := lockSlow(t, ts, gates) // its idle clock started before idle's
	idle := ts.dial(t)
	began := time.Now()
	idle.send("PING\r\n")
	idle.expect("+PONG\r\n")
	idle.expectEOF()
	if d := time.Since(began); d < 200*time.Millisecond {
		t.Fatalf("idle connection closed after %v, before the timeout", d)
	}
	openGates(gates)
	if b, err := busy.rd.ReadByte(); err != nil || (b != '*' && b != '$') {
		t.Fatalf("LOCK reply starts with %q, %v", b, err)
	}
	busy.rd.ReadString('\n')
	busy.send("PING\r\n")
	for {
		line, err := busy.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("connection with a long command was closed: %v", err)
		}
		if line == "+PONG\r\n" {
			break
		}
	}
}

func TestIdleTimeoutOffByDefault(t *testing.T) {
	ts := startServer(t, Options{})
	if ts.srv.opts.IdleTimeout != 0 {
		t.Fatal("IdleTimeout default changed")
	}
	c := ts.dial(t)
	c.send("PING\r\n")
	c.expect("+PONG\r\n")
}

// TestNonReadingClientIsClosed: a client that pipelines commands and never
// reads a reply is closed once a write blocks past WriteTimeout; others
// are served meanwhile and the goroutine count comes back.
func TestNonReadingClientIsClosed(t *testing.T) {
	ts := startServer(t, Options{WriteTimeout: 300 * time.Millisecond})
	other := ts.dial(t)
	other.send("PING\r\n")
	other.expect("+PONG\r\n")
	base := runtime.NumGoroutine()

	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	val := strings.Repeat("v", 1000)
	chunk := bytes.Repeat([]byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(val), val)), 64)
	var werr error
	for werr == nil {
		_, werr = nc.Write(chunk)
	}
	var ne net.Error
	if errors.As(werr, &ne) && ne.Timeout() {
		t.Fatal("the proxy never closed a client that does not read")
	}
	other.send("PING\r\n")
	other.expect("+PONG\r\n")
	waitUntil(t, 10*time.Second, "back to the baseline goroutine count", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
}

// TestReplyLimit: a batch whose replies exceed MaxReplyBytes closes the
// connection without them; smaller ones are served.
func TestReplyLimit(t *testing.T) {
	ts := startServer(t, Options{MaxReplyBytes: 4096})
	small := ts.dial(t)
	small.send("ECHO hello\r\n")
	small.expect("$5\r\nhello\r\n")
	big := ts.dial(t)
	v := strings.Repeat("x", 5000)
	big.send(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(v), v))
	big.expectEOF()
	small.send("PING\r\n")
	small.expect("+PONG\r\n")
}

// TestMaxRequestBytes: a request over the cap closes the connection
// silently, as Redis does past its query buffer limit.
func TestMaxRequestBytes(t *testing.T) {
	ts := startServer(t, Options{MaxRequestBytes: 1024})
	ok := ts.dial(t)
	ok.send("*2\r\n$4\r\nECHO\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n")
	ok.expect("$100\r\n" + strings.Repeat("a", 100) + "\r\n")
	big := ts.dial(t)
	big.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n" + strings.Repeat("a", 2000) + "\r\n")
	big.expectEOF()
	ok.send("PING\r\n")
	ok.expect("+PONG\r\n")
}

// TestMaxClientsSlotReused: the (N+1)th client is refused as Redis
// refuses it, and a slot freed by a client that left is taken again.
func TestMaxClientsSlotReused(t *testing.T) {
	ts := startServer(t, Options{MaxClients: 2})
	a, b := ts.dial(t), ts.dial(t)
	for _, c := range []*raw{a, b} {
		c.send("PING\r\n")
		c.expect("+PONG\r\n")
	}
	over := ts.dial(t)
	over.expect("-ERR max number of clients reached\r\n")
	over.expectEOF()
	a.nc.Close()
	// The slot is freed when the server notices the close: poll for it.
	waitUntil(t, 10*time.Second, "admitted after a slot was freed", func() bool {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			return false
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		nc.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(nc).ReadString('\n')
		return line == "+PONG\r\n"
	})
	b.send("PING\r\n")
	b.expect("+PONG\r\n")
}
