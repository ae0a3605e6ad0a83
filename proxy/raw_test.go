package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/rawio"
)

// A TCP client's connection makes its socket calls raw (internal/rawio),
// with and without a write timeout, and its replies are tried without
// waiting (startAlone's path needs that); under TLS the socket beneath
// the TLS connection is the raw one, and replies wait as any TLS write.
func TestClientConnsAreRaw(t *testing.T) {
	cert := selfSigned(t)
	for _, c := range []struct {
		timeout time.Duration
		tls     bool
	}{{0, false}, {time.Minute, false}, {time.Minute, true}} {
		name := fmt.Sprintf("write timeout %v, TLS %v", c.timeout, c.tls)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{WriteTimeout: c.timeout}
		if c.tls {
			opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		}
		srv := New(commands.New(memoryCluster(t), commands.Options{}), opts)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		<-srv.Ready()
		var nc net.Conn
		if c.tls {
			nc, err = tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // the test's own certificate
		} else {
			nc, err = net.Dial("tcp", ln.Addr().String())
		}
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write([]byte("*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(nc).ReadString('\n'); err != nil || line != "+OK\r\n" {
			t.Fatalf("%s: reply %q, %v", name, line, err)
		}
		srv.mu.Lock()
		if len(srv.conns) != 1 {
			t.Errorf("%s: %d connections served, want 1", name, len(srv.conns))
		}
		for st := range srv.conns {
			conn := st.nc
			if wc, ok := conn.(*writeTimeoutConn); ok {
				conn = wc.Conn
			}
			if tc, ok := conn.(*tls.Conn); ok && c.tls {
				conn = tc.NetConn()
			}
			if _, ok := conn.(*rawio.Conn); !ok || (st.try != nil) == c.tls {
				t.Errorf("%s: the socket is a %T (replies tried: %v), not raw", name, conn, st.try != nil)
			}
		}
		srv.mu.Unlock()
		nc.Close()
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("%s: Serve returned %v", name, err)
		}
	}
}
