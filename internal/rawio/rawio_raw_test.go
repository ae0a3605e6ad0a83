//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection, the first
// wrapped.
func pair(t testing.TB) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	rc, ok := Wrap(d).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) is not a *Conn", d)
	}
	t.Cleanup(func() { rc.Close(); peer.Close() })
	return rc, peer
}

func TestWrapLeavesOtherConnsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Wrap(a); got != a {
		t.Fatalf("Wrap(net.Pipe end) = %T, want it unchanged", got)
	}
}

func TestReadWrite(t *testing.T) {
	c, peer := pair(t)
	if n, err := c.Write([]byte("ping")); n != 4 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 16)
	if n, err := io.ReadFull(peer, buf[:4]); n != 4 || err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}
	// A read with nothing there waits in the poller for the peer.
	go peer.Write([]byte("pong"))
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

func TestReadEOFAndReset(t *testing.T) {
	c, peer := pair(t)
	peer.Close()
	if _, err := c.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("Read after the peer closed = %v, want io.EOF", err)
	}

	c, peer = pair(t)
	peer.(*net.TCPConn).SetLinger(0) // the close sends a reset
	peer.Close()
	_, err := c.Read(make([]byte, 8))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read after a reset = %v, want ECONNRESET", err)
	}
	var ne *net.OpError
	if !errors.As(err, &ne) || ne.Op != "read" {
		t.Fatalf("Read after a reset = %#v, want a read *net.OpError", err)
	}
}

func TestDeadlinesAndClose(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 8))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline = %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a Read waiting when Close ran = %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v, want net.ErrClosed", err)
	}
}

// A write bigger than the socket's buffers waits for the peer to read,
// and arrives whole; TryWrite takes what fits and never waits.
func TestWriteWaitsAndTryWriteDoesNot(t *testing.T) {
	c, peer := pair(t)
	if err := c.SetWriteBuffer(4096); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("peer read %d bytes, not the %d written", len(b), len(big))
	}

	// Nobody reads now: TryWrite fills the buffers and returns short.
	n := c.TryWrite(big)
	if n <= 0 || n >= len(big) {
		t.Fatalf("TryWrite of %d bytes to a peer that does not read took %d", len(big), n)
	}
	// Again: an ACK that comes late may free a little room, never the
	// room for the rest.
	if m := c.TryWrite(big[n:]); m >= len(big)-n {
		t.Fatalf("TryWrite to full buffers took all %d bytes", m)
	}
	if c.TryWrite(nil) != 0 {
		t.Fatal("TryWrite(nil) took bytes")
	}
	c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Write(big); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write to full buffers past its deadline = %v, want a timeout", err)
	}
}

// Writes from several goroutines each arrive whole, as on a net.Conn.
func TestConcurrentWrites(t *testing.T) {
	c, peer := pair(t)
	const writers, each = 8, 200
	msg := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 512) }
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := c.Write(msg(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	buf := make([]byte, 512)
	counts := make([]int, writers)
	for range writers * each {
		if _, err := io.ReadFull(peer, buf); err != nil {
			t.Fatal(err)
		}
		i := int(buf[0] - 'a')
		if i < 0 || i >= writers || !bytes.Equal(buf, msg(i)) {
			t.Fatalf("a write arrived interleaved with another: %q…", buf[:32])
		}
		counts[i]++
	}
	wg.Wait()
	for i, n := range counts {
		if n != each {
			t.Fatalf("writer %d: %d writes arrived, want %d", i, n, each)
		}
	}
}

// The promoted methods of the TCP connection stay reachable: the backend
// connection's reset sets a zero linger through them.
func TestTCPMethodsPromoted(t *testing.T) {
	c, _ := pair(t)
	var nc net.Conn = c
	l, ok := nc.(interface{ SetLinger(sec int) error })
	if !ok {
		t.Fatal("a *Conn has no SetLinger")
	}
	if err := l.SetLinger(0); err != nil {
		t.Fatal(err)
	}
}

func TestNoAllocations(t *testing.T) {
	c, peer := pair(t)
	msg := []byte("+OK\r\n")
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if c.TryWrite(msg) != len(msg) {
			t.Fatal("short TryWrite")
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:2*len(msg)]); err != nil {
			t.Fatal(err)
		}
		peer.Write(msg)
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	// The peer's side is a plain net.Conn, which allocates nothing either
	// on these calls.
	if allocs != 0 {
		t.Fatalf("%v allocations per write, try-write and read", allocs)
	}
}

// BenchmarkWriteRead is a write and a read of a short message each way
// on a loopback connection: the raw calls' own cost beside a plain
// net.Conn's on the other end.
func BenchmarkWriteRead(b *testing.B) {
	c, peer := pair(b)
	msg := []byte("+OK\r\n")
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			b.Fatal(err)
		}
		if _, err := peer.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			b.Fatal(err)
		}
	}
}
