package proxy

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/rawio"
)

// A TCP client's connection makes its socket calls raw (internal/rawio),
// with and without a write timeout, and its replies are tried without
// waiting (startAlone's path needs that): the same command answers the
// same either way.
func TestClientConnsAreRaw(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Minute} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := New(commands.New(memoryCluster(t), commands.Options{}), Options{WriteTimeout: timeout})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		<-srv.Ready()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write([]byte("*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(nc).ReadString('\n'); err != nil || line != "+OK\r\n" {
			t.Fatalf("write timeout %v: reply %q, %v", timeout, line, err)
		}
		srv.mu.Lock()
		if len(srv.conns) != 1 {
			t.Errorf("write timeout %v: %d connections served, want 1", timeout, len(srv.conns))
		}
		for st := range srv.conns {
			c := st.nc
			if wc, ok := c.(*writeTimeoutConn); ok {
				c = wc.Conn
			}
			if _, ok := c.(*rawio.Conn); !ok || st.try == nil {
				t.Errorf("write timeout %v: the connection is a %T (tried writes: %v), not raw", timeout, c, st.try != nil)
			}
		}
		srv.mu.Unlock()
		nc.Close()
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	}
}
