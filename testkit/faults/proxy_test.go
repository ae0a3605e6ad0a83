package faults

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ContextTimeoutEnabled: true, PoolSize: 1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestProxyModes(t *testing.T) {
	e := Start(t, 1)
	p := e.Backends[0].Proxy
	c := client(t, p.Addr())

	if err := c.Set(ctxT(t, 2*time.Second), "k", "v", 0).Err(); err != nil {
		t.Fatalf("pass: %v", err)
	}

	p.SetDelay(300 * time.Millisecond)
	t0 := time.Now()
	if err := c.Get(ctxT(t, 5*time.Second), "k").Err(); err != nil {
		t.Fatalf("delay: %v", err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Errorf("delayed GET took %v, want >= 300ms", d)
	}
	if err := c.Get(ctxT(t, 50*time.Millisecond), "k").Err(); !isTimeout(err) {
		t.Errorf("delayed GET with a 50ms deadline: %v, want a timeout", err)
	}

	p.Set(Blackhole)
	if err := c.Ping(ctxT(t, 100*time.Millisecond)).Err(); !isTimeout(err) {
		t.Errorf("blackhole: %v, want a timeout", err)
	}

	p.SetError("LOADING Redis is loading the dataset in memory")
	err := c.Do(ctxT(t, 2*time.Second), "set", "k", "v", "nx", "px", "1000").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "LOADING") {
		t.Errorf("error mode: %v, want LOADING", err)
	}

	p.Set(ResetReply)
	if err := c.Get(ctxT(t, 2*time.Second), "k").Err(); err == nil {
		t.Error("reset mid-reply: GET succeeded")
	}

	p.Set(Pass)
	if v, err := c.Get(ctxT(t, 2*time.Second), "k").Result(); err != nil || v != "v" {
		t.Errorf("pass again: %q, %v", v, err)
	}
}

// TestResetReplyCutsTheReply checks on the wire that the client receives
// part of a reply and then a reset, not a clean close.
func TestResetReplyCutsTheReply(t *testing.T) {
	e := Start(t, 1)
	p := e.Backends[0].Proxy
	p.Set(ResetReply)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("PING hello-world\r\n")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	full := "$11\r\nhello-world\r\n"
	if err == nil || len(got) == 0 || len(got) >= len(full) || !strings.HasPrefix(full, string(got)) {
		t.Errorf("read %q, %v: want a prefix of %q, then a reset", got, err, full)
	}
}

func TestErrorModeCountsPipelinedCommands(t *testing.T) {
	e := Start(t, 1)
	p := e.Backends[0].Proxy
	p.SetError("OOM command not allowed")
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	// Two commands, the second split across writes.
	conn.Write([]byte("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk"))
	conn.Write([]byte("\r\n$1\r\nv\r\nPING\r\n"))
	r := bufio.NewReader(conn)
	for i := range 3 {
		line, err := r.ReadString('\n')
		if err != nil || line != "-OOM command not allowed\r\n" {
			t.Fatalf("reply %d: %q, %v", i, line, err)
		}
	}
}

func TestRefuseResetsOpenConnections(t *testing.T) {
	e := Start(t, 1)
	p := e.Backends[0].Proxy
	c := client(t, p.Addr())
	if err := c.Ping(ctxT(t, 2*time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	p.Set(Refuse)
	if err := c.Ping(ctxT(t, 2*time.Second)).Err(); err == nil {
		t.Error("PING through a refusing proxy succeeded")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
