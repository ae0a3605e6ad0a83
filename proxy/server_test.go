package proxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// gateNode is an in-memory node whose SetNX of key "slow" reports that it
// started and then blocks until the test opens the gate (or ctx ends), so
// a test can hold a command in flight without sleeping.
type gateNode struct {
	*embedded.Memory
	entered chan struct{}
	gate    chan struct{}
}

func newGateNode(name string) *gateNode {
	return &gateNode{Memory: embedded.New(name), entered: make(chan struct{}, 16), gate: make(chan struct{})}
}

// Do holds a SET NX of key "slow" until the gate opens.
func (g *gateNode) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind != quorum.SetNX || cmd.Key != "slow" {
		g.Memory.Do(deadline, cmd, r)
		return
	}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		g.entered <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			r.Receive(quorum.Reply{Err: ctx.Err()})
			return
		}
		g.Memory.Do(deadline, cmd, r)
	}()
}

type testServer struct {
	srv     *Server
	cluster *quorum.Cluster
	addr    string
	served  chan error // Serve's result
}

// startServer serves a real commands.Handler over nodes (three in-memory
// nodes when none are given) on a free port; cleanup shuts it down and
// waits for Serve to return.
func startServer(t *testing.T, opts Options, nodes ...quorum.Node) *testServer {
	t.Helper()
	if len(nodes) == 0 {
		for i := range 3 {
			nodes = append(nodes, embedded.New(fmt.Sprintf("mem-%d", i+1)))
		}
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 10 * time.Second // gateNode decides when calls end
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: New(commands.New(cluster, commands.Options{}), opts), cluster: cluster, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- ts.srv.Serve(ln) }()
	<-ts.srv.Ready()
	t.Cleanup(func() {
		ts.srv.Close()
		if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		for _, n := range nodes {
			n.Close()
		}
	})
	return ts
}

func (ts *testServer) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a plain connection for checking replies byte for byte.
type raw struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func (ts *testServer) dial(t *testing.T) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second)) // a hung test fails instead of blocking
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (r *raw) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.t.Fatal(err)
	}
}

// expect reads exactly len(want) bytes and compares them.
func (r *raw) expect(want string) {
	r.t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.rd, got); err != nil {
		r.t.Fatalf("reading %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		r.t.Fatalf("got %q, want %q", got, want)
	}
}

// expectEOF checks that the server closed the connection with nothing
// more to say.
func (r *raw) expectEOF() {
	r.t.Helper()
	b, err := r.rd.ReadByte()
	if err == nil {
		rest, _ := r.rd.Peek(r.rd.Buffered())
		r.t.Fatalf("connection still open, got %q", append([]byte{b}, rest...))
	}
	if !errors.Is(err, io.EOF) && !isReset(err) {
		r.t.Fatalf("got %v, want EOF", err)
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "reset") }

func TestPingGoRedis(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.client(t)
	ctx := context.Background()
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	res, err := c.Do(ctx, "LOCK", "k", "1000").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK = %v, %v", res, err)
	}
	if err := c.Do(ctx, "LOCK", "k", "1000").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK on a held key = %v, want nil reply", err)
	}
}

func TestRawReplies(t *testing.T) {
	tests := []struct {
		name, in, want string
		closes         bool
	}{
		{"inline ping", "PING\r\n", "+PONG\r\n", false},
		{"multibulk ping", "*1\r\n$4\r\nPING\r\n", "+PONG\r\n", false},
		{"echo", "*2\r\n$4\r\nECHO\r\n$3\r\na b\r\n", "$3\r\na b\r\n", false},
		{"null reply RESP2", "GET nokey\r\n", "$-1\r\n", false},
		{"unknown command", "FOO bar\r\n", "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n", false},
		{"bad multibulk length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n", true},
		{"expected dollar", "*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n", true},
		{"bad bulk length", "*1\r\n$-10\r\n", "-ERR Protocol error: invalid bulk length\r\n", true},
		{"unbalanced quotes", "ECHO \"a\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n", true},
	}
	ts := startServer(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.dial(t)
			r.send(tt.in)
			r.expect(tt.want)
			if tt.closes {
				r.expectEOF()
				return
			}
			r.send("PING\r\n") // still open
			r.expect("+PONG\r\n")
		})
	}
}

func TestRESP3AfterHello(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("HELLO 3\r\n")
	if b, err := r.rd.ReadByte(); err != nil || b != '%' {
		t.Fatalf("HELLO 3 reply starts with %q, %v; want a map", b, err)
	}
	r.rd.Discard(r.rd.Buffered()) // the map's body is the command table's business
	r.send("GET nokey\r\n")
	r.expect("_\r\n")
}

func TestPipelineKeepsOrder(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.client(t)
	pipe := c.Pipeline()
	const n = 200
	cmds := make([]*redis.StringCmd, n)
	for i := range n {
		cmds[i] = pipe.Echo(context.Background(), fmt.Sprint(i))
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != fmt.Sprint(i) {
			t.Fatalf("reply %d = %q", i, cmd.Val())
		}
	}
}

func TestRawPipelineOneWrite(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("PING\r\nECHO a\r\n*2\r\n$4\r\nECHO\r\n$1\r\nb\r\nGET x\r\n")
	r.expect("+PONG\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n")
}

func TestQuitClosesAfterReply(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.dial(t)
	r.send("PING\r\nQUIT\r\nPING\r\n") // the PING after QUIT is never run
	r.expect("+PONG\r\n+OK\r\n")
	r.expectEOF()
}

func TestMaxClients(t *testing.T) {
	ts := startServer(t, Options{MaxClients: 1})
	first := ts.dial(t)
	first.send("PING\r\n")
	first.expect("+PONG\r\n") // the first client holds the only slot
	second := ts.dial(t)
	second.expect("-ERR max number of clients reached\r\n")
	second.expectEOF()
	first.send("PING\r\n")
	first.expect("+PONG\r\n")
}

// lockSlow sends a LOCK that blocks in gate until the test opens it, and
// returns once every node has received it.
func lockSlow(t *testing.T, ts *testServer, gates []*gateNode) *raw {
	t.Helper()
	r := ts.dial(t)
	r.send("LOCK slow 5000\r\n")
	for _, g := range gates {
		<-g.entered
	}
	return r
}

func gateNodes() ([]*gateNode, []quorum.Node) {
	var gates []*gateNode
	var nodes []quorum.Node
	for i := range 3 {
		g := newGateNode(fmt.Sprintf("gate-%d", i+1))
		gates = append(gates, g)
		nodes = append(nodes, g)
	}
	return gates, nodes
}

func openGates(gates []*gateNode) {
	for _, g := range gates {
		close(g.gate)
	}
}

func TestShutdownWaitsForInflight(t *testing.T) {
	gates, nodes := gateNodes()
	ts := startServer(t, Options{}, nodes...)
	idle := ts.dial(t)
	idle.send("PING\r\n")
	idle.expect("+PONG\r\n")
	busy := lockSlow(t, ts, gates)

	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(context.Background()) }()
	<-ts.srv.stopped // Shutdown has begun: no new connections
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Fatal("dial succeeded after Shutdown began")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a command in flight", err)
	default:
	}
	openGates(gates)
	if b, err := busy.rd.ReadByte(); err != nil || b != '*' {
		t.Fatalf("in-flight LOCK reply starts with %q, %v; want an array", b, err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	idle.expectEOF()
	if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve = %v", err)
	}
	ts.served <- ErrServerClosed // for the cleanup
}

func TestCommandAfterShutdownBeganIsNotRun(t *testing.T) {
	gates, nodes := gateNodes()
	ts := startServer(t, Options{}, nodes...)
	late := ts.dial(t)
	late.send("PING\r\n")
	late.expect("+PONG\r\n")
	lockSlow(t, ts, gates)
	go ts.srv.Shutdown(context.Background())
	<-ts.srv.stopped
	late.send("PING\r\n")
	late.expectEOF()
	openGates(gates)
}

func TestShutdownDeadlineForcesClose(t *testing.T) {
	gates, nodes := gateNodes()
	ts := startServer(t, Options{}, nodes...)
	busy := lockSlow(t, ts, gates)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v, want context.Canceled", err)
	}
	busy.expectEOF()
	// Ending the session cancelled the blocked command: Serve returns
	// without the gates ever opening.
	if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve = %v", err)
	}
	ts.served <- ErrServerClosed
}

func TestShutdownTwiceAndClose(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.client(t)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := ts.srv.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown #%d = %v", i+1, err)
		}
	}
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if ts.srv.Addr() == nil {
		t.Fatal("Addr is nil after Serve")
	}
}

func TestServeAfterShutdown(t *testing.T) {
	srv := New(nil, Options{})
	if srv.Addr() != nil {
		t.Fatal("Addr before Serve is not nil")
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve = %v, want ErrServerClosed", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open")
	}
}

func TestTLS(t *testing.T) {
	cert := selfSigned(t)
	ts := startServer(t, Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	c := redis.NewClient(&redis.Options{
		Addr: ts.addr, Protocol: 2, DisableIdentity: true,
		TLSConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own certificate
	})
	defer c.Close()
	if got, err := c.Ping(context.Background()).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS = %q, %v", got, err)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
