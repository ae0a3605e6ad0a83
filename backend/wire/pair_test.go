package wire

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
)

// pairResult is one answer to a request submitted straight to a line.
type pairResult struct {
	rep Reply
	at  time.Time
	err error
}

type pairAnswer chan pairResult

func (a pairAnswer) Answer(rep Reply, at time.Time, err error) { a <- pairResult{rep, at, err} }

// scriptedServer accepts connections on loopback; on its first it waits for
// want commands and answers them all with first in one write; on later
// ones it answers every command with +PONG.
func scriptedServer(t *testing.T, want int, first string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go serveScripted(c, n == 0, want, first)
		}
	}()
	return ln.Addr().String()
}

func serveScripted(c net.Conn, scripted bool, want int, first string) {
	var buf []byte
	tmp := make([]byte, 4096)
	for got := 0; ; {
		k, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:k]...)
		for {
			_, used, err := ParseReply(buf)
			if err != nil || used == 0 {
				break
			}
			buf, got = buf[used:], got+1
			if !scripted {
				c.Write([]byte("+PONG\r\n"))
			} else if got == want {
				c.Write([]byte(first))
			}
		}
	}
}

func newScriptedLine(t *testing.T, addr string) *Line {
	var d net.Dialer
	m := NewMux(Config{Conns: 1, Timeout: time.Second, Dial: func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}})
	t.Cleanup(m.Close)
	return m.lines[0]
}

func awaitPair(t *testing.T, a pairAnswer) pairResult {
	t.Helper()
	select {
	case res := <-a:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return pairResult{}
	}
}

// The replies of one read go each to its request, a skipped reply
// included; one that nobody asked for resets the connection only after
// the replies before it were delivered, and the line carries on.
func TestLinePairsRepliesOfOneRead(t *testing.T) {
	addr := scriptedServer(t, 4, "+QUEUED\r\n:1\r\n:2\r\n:3\r\n:4\r\n")
	l := newScriptedLine(t, addr)
	dl := time.Now().Add(10 * time.Second)
	answers := make([]pairAnswer, 3)
	for i := range answers {
		answers[i] = make(pairAnswer, 1)
		r := &Request{Buf: resp.AppendCommand(nil, []string{"get", "k"})}
		if i == 0 {
			// Two commands, as ASKING before a command: the first reply is skipped.
			r.Buf = append(resp.AppendCommand(nil, []string{"asking"}), r.Buf...)
			r.Skip = 1
		}
		l.Submit(r, dl, answers[i])
	}
	for i, a := range answers {
		res := awaitPair(t, a)
		if res.err != nil || res.rep.Kind != ':' || res.rep.Num != int64(i+1) || res.at.IsZero() {
			t.Errorf("request %d: %+v, want :%d with its read time", i, res, i+1)
		}
	}
	// The unasked :4 reset the first connection; a new one answers (only
	// the scripted first connection answers otherwise). A PING written
	// before the line read the :4 goes out on the first connection and
	// fails with it: it is sent again.
	for try := 1; ; try++ {
		a := make(pairAnswer, 1)
		l.Submit(&Request{Buf: resp.AppendCommand(nil, []string{"ping"})}, time.Now().Add(10*time.Second), a)
		res := awaitPair(t, a)
		if res.err == nil && res.rep.Str == "PONG" {
			break
		}
		if res.err == nil || try == 3 {
			t.Fatalf("after the unasked reply: %+v (%v), want PONG on a new connection", res, res.err)
		}
	}
}
