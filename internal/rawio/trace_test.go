//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rawio

import (
	"io"
	"sync"
	"syscall"
	"testing"
	"time"
)

// callLog keeps what Trace tells of one Conn's calls.
type callLog struct {
	c      *Conn
	mu     sync.Mutex
	calls  []string
	eagain chan struct{} // a read found the socket empty
}

func (l *callLog) tell(call Call) {
	if call.Conn != l.c {
		return
	}
	op := "read"
	if call.Write {
		op = "write"
	}
	s := op + " " + string(call.P)
	if call.Errno != 0 {
		s = op + " " + call.Errno.Error()
	}
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
	if !call.Write && call.Errno == syscall.EAGAIN {
		select {
		case l.eagain <- struct{}{}:
		default:
		}
	}
}

// take returns the calls told since the last take.
func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// Trace tells each system call as it is made: a write that the socket
// takes whole is one call; a read with nothing there finds EAGAIN, waits
// in the poller and reads again; a read of a closed peer brings nothing.
// Once stopped, nothing is told.
func TestTrace(t *testing.T) {
	c, peer := pair(t)
	l := &callLog{c: c, eagain: make(chan struct{}, 1)}
	stop := Trace(l.tell)
	defer func() { stop() }()

	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if got := l.take(); len(got) != 1 || got[0] != "write ping" {
		t.Fatalf("a write of 4 bytes was told as %q", got)
	}
	if _, err := io.ReadFull(peer, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}

	read := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := c.Read(buf)
		read <- string(buf[:n])
	}()
	select {
	case <-l.eagain: // the Read waits in the poller now
	case <-time.After(10 * time.Second):
		t.Fatalf("a Read with nothing there was told as %q; want a read that found EAGAIN", l.take())
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "pong" {
		t.Fatalf("Read = %q", got)
	}
	got := l.take()
	if len(got) < 2 || got[len(got)-1] != "read pong" {
		t.Fatalf("a read that waited was told as %q; want reads that found EAGAIN, then the one that read", got)
	}
	for _, s := range got[:len(got)-1] {
		if s != "read "+syscall.EAGAIN.Error() {
			t.Fatalf("a read that waited was told as %q; want reads that found EAGAIN, then the one that read", got)
		}
	}

	peer.Close()
	if _, err := c.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("Read after the peer closed = %v, want io.EOF", err)
	}
	if got := l.take(); len(got) != 1 || got[0] != "read " {
		t.Fatalf("a read of a closed peer was told as %q", got)
	}

	stop()
	c.Write([]byte("x"))
	if got := l.take(); len(got) != 0 {
		t.Fatalf("calls told after stop: %q", got)
	}
	stop = Trace(l.tell) // a trace may start again once stopped
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second Trace while one runs did not panic")
			}
		}()
		Trace(l.tell)
	}()
}

// A trace costs the calls no allocation, set or not.
func TestTraceNoAllocations(t *testing.T) {
	c, peer := pair(t)
	msg := []byte("+OK\r\n")
	buf := make([]byte, 64)
	round := func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	stop := Trace(func(Call) { n++ })
	allocs := testing.AllocsPerRun(100, round)
	stop()
	if allocs != 0 || n < 100 {
		t.Fatalf("%v allocations per traced write (%d calls told)", allocs, n)
	}
}
