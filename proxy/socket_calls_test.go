package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
)

// countingListener counts the Read and Write calls on the connections it
// accepts. Its connections are not *net.TCPConn, so the proxy leaves
// them as they are (not raw, their replies never tried from a round's
// goroutine), and a call is a net.Conn's: a Read that finds nothing
// there is two system calls around a wait in the poller.
// TestClientSyscallsPerBatch counts the system calls of a raw socket.
type countingListener struct {
	net.Listener
	reads, writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.l.reads.Add(1)
	return c.Conn.Read(p)
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	return c.Conn.Write(p)
}

// TestSocketCallsPerBatch: a pipelined batch costs the proxy one read and
// one write on the client's socket, however many commands it holds: the
// replies of a batch go out together, and no request is read in pieces
// that arrived whole.
func TestSocketCallsPerBatch(t *testing.T) {
	const rounds, depth = 20, 16
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := New(commands.New(memoryCluster(t), commands.Options{}), Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(cl) }()
	<-srv.Ready()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(nc)
	for r := range rounds {
		var b strings.Builder
		for i := range depth {
			k := fmt.Sprintf("k%d.%d", r, i)
			fmt.Fprintf(&b, "*6\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n", len(k), k)
		}
		if _, err := io.WriteString(nc, b.String()); err != nil {
			t.Fatal(err)
		}
		for range depth {
			if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
				t.Fatalf("reply %q, %v", line, err)
			}
		}
	}
	// The read after the last batch is waiting for more: one over.
	if r, w := cl.reads.Load(), cl.writes.Load(); r > rounds+1 || w != rounds {
		t.Fatalf("%d reads and %d writes on the socket for %d batches of %d commands; want %d and %d",
			r, w, rounds, depth, rounds+1, rounds)
	}
}
