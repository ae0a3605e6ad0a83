package compat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// sessionTTL is the harness's --session-ttl: short, so that a lock taken
// without an expiry by a killed client is seen to vanish quickly.
const sessionTTL = time.Second

// instance is one redlockd in front of three real redis-servers.
type instance struct {
	addr     string
	port     int
	backends []*redistest.Server
}

// startRedlockd serves redlockd on a free loopback port over three fresh
// redis-server processes; the test's cleanup shuts it down and waits for
// it. The node timeout is generous: the machine is shared and slow.
func startRedlockd(t *testing.T) *instance {
	t.Helper()
	servers := redistest.StartN(t, 3)
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := commands.New(cluster, commands.Options{SessionTTL: sessionTTL, Version: "compat"})
	srv := proxy.New(h, proxy.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-srv.Ready()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, proxy.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		for _, n := range nodes {
			n.Close()
		}
	})
	tcp := ln.Addr().(*net.TCPAddr)
	return &instance{addr: tcp.String(), port: tcp.Port, backends: servers}
}

// client is a go-redis client of the instance with the given protocol
// (0: the library's default, RESP3), closed by the test's cleanup.
func (in *instance) client(t *testing.T, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: in.addr, Protocol: protocol})
	t.Cleanup(func() { c.Close() })
	return c
}

// backendValues reads key directly on each backend, for checking that a
// lock really is (or is not) on a majority.
func (in *instance) backendValues(t *testing.T, key string) []string {
	t.Helper()
	vals := make([]string, len(in.backends))
	for i, s := range in.backends {
		v, err := s.Client().Get(context.Background(), key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			vals[i] = "<nil>"
		case err != nil:
			vals[i] = fmt.Sprintf("<err %v>", err)
		default:
			vals[i] = v
		}
	}
	return vals
}

// countEqual counts the entries of vals equal to want.
func countEqual(vals []string, want string) int {
	n := 0
	for _, v := range vals {
		if v == want {
			n++
		}
	}
	return n
}

// ctx is a per-test context bounded so a hung client fails the test
// instead of blocking the suite.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
