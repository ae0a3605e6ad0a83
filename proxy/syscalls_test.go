//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package proxy

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/redlockd/redlockd/internal/rawio"
)

// sockCalls records the system calls made on the raw sockets of the
// process (rawio.Trace), socket by socket: the client connections the
// proxy accepts and the lines of its Redis nodes. The test's own end of
// a connection is a plain net.Conn, never told.
type sockCalls struct {
	mu    sync.Mutex
	socks map[*rawio.Conn]*sockLog
	wrote chan struct{} // a write moved bytes
}

// sockLog is what one socket's calls did.
type sockLog struct {
	local, remote string
	dataReads     []int    // the bytes of each read that brought some
	emptyReads    int      // reads that found nothing there (EAGAIN)
	writes        []int    // the bytes of each write that moved some
	other         []string // anything else: EOF, EINTR, a write's EAGAIN, errors
	out           []byte   // every byte written, in order
}

// traceSockets records until the test ends.
func traceSockets(t *testing.T) *sockCalls {
	t.Helper()
	s := &sockCalls{socks: make(map[*rawio.Conn]*sockLog), wrote: make(chan struct{}, 1)}
	t.Cleanup(rawio.Trace(s.tell))
	return s
}

func (s *sockCalls) tell(c rawio.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.socks[c.Conn]
	if l == nil {
		l = &sockLog{local: c.Conn.LocalAddr().String(), remote: c.Conn.RemoteAddr().String()}
		s.socks[c.Conn] = l
	}
	switch {
	case !c.Write && len(c.P) > 0:
		l.dataReads = append(l.dataReads, len(c.P))
	case !c.Write && c.Errno == syscall.EAGAIN:
		l.emptyReads++
	case c.Write && len(c.P) > 0:
		l.writes = append(l.writes, len(c.P))
		l.out = append(l.out, c.P...)
		select {
		case s.wrote <- struct{}{}:
		default:
		}
	case c.Write:
		l.other = append(l.other, "write: "+c.Errno.Error())
	case c.Errno != 0:
		l.other = append(l.other, "read: "+c.Errno.Error())
	default:
		l.other = append(l.other, "read: EOF")
	}
}

// find returns copies of the logs of the sockets that match.
func (s *sockCalls) find(match func(*sockLog) bool) []sockLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sockLog
	for _, l := range s.socks {
		if match(l) {
			c := *l
			c.dataReads = append([]int(nil), l.dataReads...)
			c.writes = append([]int(nil), l.writes...)
			c.other = append([]string(nil), l.other...)
			c.out = append([]byte(nil), l.out...)
			out = append(out, c)
		}
	}
	return out
}

// setBatch is a pipelined batch of depth plain locks, SET key tok NX PX
// ms, on keys of one length: every batch of a depth has the same size.
func setBatch(prefix string, b, depth int) string {
	var sb strings.Builder
	for i := range depth {
		k := fmt.Sprintf("%s%03d.%03d", prefix, b, i)
		fmt.Fprintf(&sb, "*6\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n", len(k), k)
	}
	return sb.String()
}

// TestClientSyscallsPerBatch counts the system calls on a client's real
// socket. The client sends a pipelined batch in one write and waits for
// its replies before the next. The proxy's connection goroutine reads
// once into a 16 KiB buffer: a batch that arrived whole is taken by one
// read, which may be preceded by one that found the socket empty and
// waited in the poller (the batch had not arrived yet). The replies of a
// batch go out in one write: the batch's buffer, flushed once
// (serveBatch), or a single command's reply, tried once by the goroutine
// that decided its round (startAlone). So for B batches: exactly B reads
// that bring data, each a whole batch; exactly B writes, each a whole
// batch's replies; at most B+1 reads that find nothing (one before each
// batch, one after the last, cut short by the close); nothing else.
//
// A read that finds nothing waits for one wake-up of the poller; a
// wake-up with nothing there (none is expected on a socket only this
// test writes to) would cost one more.
func TestClientSyscallsPerBatch(t *testing.T) {
	const batches = 20
	for _, depth := range []int{16, 1} {
		t.Run(fmt.Sprintf("K=%d", depth), func(t *testing.T) {
			calls := traceSockets(t)
			ts := startServer(t, Options{})
			r := ts.dial(t)
			for b := range batches {
				r.send(setBatch("k", b, depth))
				for range depth {
					r.expect("+OK\r\n")
				}
			}
			// Serve returns once the connection's goroutines have ended:
			// every call on its socket has been made.
			ts.srv.Close()
			<-ts.srv.done
			socks := calls.find(func(l *sockLog) bool { return l.local == ts.addr })
			if len(socks) != 1 {
				t.Fatalf("%d of the proxy's sockets on %s made calls, want the client's alone", len(socks), ts.addr)
			}
			l := socks[0]
			reqSize, replySize := len(setBatch("k", 0, depth)), depth*len("+OK\r\n")
			if len(l.dataReads) != batches || !all(l.dataReads, reqSize) {
				t.Errorf("%d batches of %d bytes were read in %d reads of %v bytes; want one read per batch",
					batches, reqSize, len(l.dataReads), l.dataReads)
			}
			if len(l.writes) != batches || !all(l.writes, replySize) {
				t.Errorf("the replies of %d batches (%d bytes each) were written in %d writes of %v bytes; want one write per batch",
					batches, replySize, len(l.writes), l.writes)
			}
			if l.emptyReads > batches+1 {
				t.Errorf("%d reads found the socket empty over %d batches; want at most one per batch and one after the last",
					l.emptyReads, batches)
			}
			if len(l.other) > 0 {
				t.Errorf("other calls on the socket: %q", l.other)
			}
			t.Logf("K=%d, %d batches: %d reads with data, %d empty, %d writes", depth, batches, len(l.dataReads), l.emptyReads, len(l.writes))
		})
	}
}

func all(ns []int, v int) bool {
	for _, n := range ns {
		if n != v {
			return false
		}
	}
	return true
}
