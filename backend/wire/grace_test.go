package wire

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
)

// A written request waits its whole configured budget again past its
// deadline before it marks the connection stalled, however little of the
// budget was left when the writer sent it (time spent queued or dialling
// does not shorten the grace); without a configured budget, what was left
// when written, at least minStaleGrace.
func TestStaleGraceIsTheWholeBudget(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		budget, left, want time.Duration
	}{
		{2 * time.Second, 10 * time.Millisecond, 2 * time.Second},
		{50 * time.Millisecond, 10 * time.Millisecond, minStaleGrace},
		{0, 2 * time.Second, 2 * time.Second},
		{0, 10 * time.Millisecond, minStaleGrace},
	} {
		c := Config{Grace: tt.budget}
		if got := c.graceFor(now.Add(tt.left), now); got != tt.want {
			t.Errorf("budget %v, %v left: grace %v, want %v", tt.budget, tt.left, got, tt.want)
		}
	}

	// Through a line's writer, to a server that never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	var d net.Dialer
	m := NewMux(Config{Conns: 1, Timeout: time.Second, Grace: 3 * time.Second, Dial: func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}})
	defer m.Close()
	l := m.lines[0]
	r := &Request{Buf: resp.AppendCommand(nil, []string{"get", "k"})}
	l.Submit(r, time.Now().Add(time.Second), make(pairAnswer, 1))
	for i := 0; ; i++ {
		l.mu.Lock()
		written := l.cur != nil && l.cur.pending.len() == 1
		var grace time.Duration
		if written {
			grace = l.cur.pending.front().grace
		}
		l.mu.Unlock()
		if written {
			if grace != 3*time.Second {
				t.Fatalf("written request's grace %v, want the configured 3s", grace)
			}
			return
		}
		if i == 500 {
			t.Fatal("the request was never written")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
