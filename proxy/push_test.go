package proxy

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// onlyConn waits until ts serves exactly one connection and returns it.
func (ts *testServer) onlyConn(t *testing.T) *connState {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		ts.srv.mu.Lock()
		for st := range ts.srv.conns {
			if len(ts.srv.conns) == 1 {
				ts.srv.mu.Unlock()
				return st
			}
		}
		ts.srv.mu.Unlock()
	}
	t.Fatal("the connection was not registered")
	return nil
}

// Push messages sent from other goroutines while replies are being
// written arrive whole, between replies, never inside one.
func TestPushBetweenReplies(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("PING\r\n")
	r.expect("+PONG\r\n")
	st := ts.onlyConn(t)
	const pings, pushes = 300, 50
	var wg sync.WaitGroup
	wg.Go(func() {
		for range pushes {
			st.push("redlockd", "lock-lost", "k")
		}
	})
	r.send(strings.Repeat("*1\r\n$4\r\nPING\r\n", pings))
	const push = ">3\r\n$8\r\nredlockd\r\n$9\r\nlock-lost\r\n$1\r\nk\r\n"
	var gotPings, gotPushes int
	for gotPings < pings || gotPushes < pushes {
		b, err := r.rd.Peek(1)
		if err != nil {
			t.Fatalf("after %d replies and %d pushes: %v", gotPings, gotPushes, err)
		}
		if b[0] == '>' {
			r.expect(push)
			gotPushes++
			continue
		}
		r.expect("+PONG\r\n")
		gotPings++
	}
	wg.Wait()
}
