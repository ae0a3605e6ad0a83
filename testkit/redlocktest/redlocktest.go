// Package redlocktest serves redlockd in-process, in front of real
// redis-server processes started by package redistest, for tests that
// drive it with real clients. Everything it starts is stopped by the
// test's cleanup.
package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/server"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Options shape one instance. Zero values take the defaults noted.
type Options struct {
	// Backends is how many redis-server processes (in-memory nodes, for
	// StartMemory) to start. Default 3.
	Backends int
	// ServerArgs are extra redis-server arguments for every backend.
	ServerArgs []string
	// NodeTimeout is the per-node timeout. Default 500ms: generous,
	// because test machines are shared and slow.
	NodeTimeout time.Duration
	// Commands are the command table's options (password, max ttl,
	// session ttl…); Observer and Info are the stack's metrics, as in the
	// binary. MaxTTL is also the quorum's.
	Commands commands.Options
	// Proxy are the listener's options, as given: zero is no limit.
	Proxy proxy.Options
	// Quorum, when set, adjusts the lock cluster's configuration (retry
	// jitter, restart quarantine…) after the defaults above. The restart
	// quarantine is off unless it turns it on.
	Quorum func(*quorum.Config)
}

// Instance is one redlockd serving on a free loopback port.
type Instance struct {
	Addr     string
	Port     int
	Backends []*redistest.Server
	// Clusters are the Redis Clusters of StartOverClusters, one per node.
	Clusters []*redistest.Cluster
	Nodes    []*backend.Redis
	Cluster  *quorum.Cluster
	Handler  *commands.Handler
	Server   *proxy.Server
	// Metrics is the registry behind /metrics and INFO's counters.
	Metrics *metrics.Metrics
}

// Start serves redlockd over freshly started backends.
func Start(t testing.TB, opts Options) *Instance {
	t.Helper()
	if opts.Backends == 0 {
		opts.Backends = 3
	}
	servers := redistest.StartN(t, opts.Backends, opts.ServerArgs...)
	return StartOver(t, servers, opts)
}

// StartOver serves redlockd over backends that are already running, so
// that two instances can share them.
func StartOver(t testing.TB, servers []*redistest.Server, opts Options) *Instance {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return startAddrs(t, addrs, servers, opts)
}

// StartOverAddrs serves redlockd over Redis at addrs, such as fault
// proxies in front of real backends; Backends stays empty.
func StartOverAddrs(t testing.TB, addrs []string, opts Options) *Instance {
	t.Helper()
	return startAddrs(t, addrs, nil, opts)
}

func startAddrs(t testing.TB, addrs []string, servers []*redistest.Server, opts Options) *Instance {
	t.Helper()
	in := &Instance{Backends: servers}
	nodes := make([]quorum.Node, len(addrs))
	for i, addr := range addrs {
		n, err := backend.NewRedis(addr, backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in.Nodes = append(in.Nodes, n)
		nodes[i] = n
	}
	in.start(t, nodes, opts)
	return in
}

// StartMemory serves redlockd over Options.Backends in-memory nodes, for
// tests of the listener and the command surface that need no Redis
// (ServerArgs is ignored; Backends and Nodes stay empty).
func StartMemory(t testing.TB, opts Options) *Instance {
	t.Helper()
	if opts.Backends == 0 {
		opts.Backends = 3
	}
	nodes := make([]quorum.Node, opts.Backends)
	for i := range nodes {
		nodes[i] = embedded.New(fmt.Sprintf("m%d", i+1))
	}
	in := &Instance{}
	in.start(t, nodes, opts)
	return in
}

// start assembles redlockd over nodes as the binary does (package
// stack) and serves it; the test's cleanup shuts it down, which closes
// the nodes.
func (in *Instance) start(t testing.TB, nodes []quorum.Node, opts Options) {
	t.Helper()
	rd, err := server.New(context.Background(), stackConfig(nodes, opts))
	if err != nil {
		t.Fatal(err)
	}
	in.Cluster, in.Handler, in.Server, in.Metrics = rd.Cluster(), rd.Handler(), rd.Server(), rd.Metrics()
	in.serve(t, rd)
}

// stackConfig maps opts. The quarantine is off unless a test asks for it
// (tests restart backends on purpose); the commands' MaxTTL is the one
// MaxTTL of the stack.
func stackConfig(nodes []quorum.Node, opts Options) server.Config {
	c := server.DefaultConfig()
	c.Nodes = nodes
	c.NodeTimeout = 500 * time.Millisecond
	if opts.NodeTimeout > 0 {
		c.NodeTimeout = opts.NodeTimeout
	}
	c.RestartQuarantine = 0
	o := opts.Commands
	if o.MaxTTL > 0 {
		c.MaxTTL = o.MaxTTL
	}
	if o.MaxWait > 0 {
		c.MaxWait = o.MaxWait
	}
	if o.SessionTTL > 0 {
		c.SessionTTL = o.SessionTTL
	}
	if o.Version != "" {
		c.Version = o.Version
	}
	if o.Logger != nil {
		c.Logger = o.Logger
	}
	c.Password, c.Proxy, c.Tune = o.Password, opts.Proxy, opts.Quorum
	return c
}

func (in *Instance) serve(t testing.TB, rd *server.Redlockd) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rd.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rd.Serve(ln) }()
	select {
	case <-rd.Ready():
	case err := <-served:
		rd.Close()
		t.Fatalf("redlocktest: Serve: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rd.Shutdown(ctx); err != nil {
			t.Errorf("redlocktest: Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, proxy.ErrServerClosed) {
			t.Errorf("redlocktest: Serve returned %v, want ErrServerClosed", err)
		}
	})
	tcp := ln.Addr().(*net.TCPAddr)
	in.Addr, in.Port = tcp.String(), tcp.Port
}

// Client is a go-redis client of the instance (protocol 0: the library's
// default, RESP3), closed by the test's cleanup.
func (in *Instance) Client(t testing.TB, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: protocol})
	t.Cleanup(func() { c.Close() })
	return c
}

// BackendValues reads key directly on each backend (on a Redis Cluster,
// on the master of its slot): its value, "<nil>" when absent, or
// "<err …>".
func (in *Instance) BackendValues(t testing.TB, key string) []string {
	t.Helper()
	if len(in.Clusters) > 0 {
		return clusterValues(t, in.Clusters, key)
	}
	return ValuesIn(t, in.Backends, 0, key)
}

// ValuesIn reads key in database db of each of backends directly: its
// value, "<nil>" when absent, or "<err …>".
func ValuesIn(t testing.TB, backends []*redistest.Server, db int, key string) []string {
	t.Helper()
	addrs := make([]string, len(backends))
	for i, s := range backends {
		addrs[i] = s.Addr()
	}
	return ValuesAt(t, addrs, db, key)
}

// ValuesAt reads key in database db of the Redis at each of addrs
// directly: its value, "<nil>" when absent, or "<err …>".
func ValuesAt(t testing.TB, addrs []string, db int, key string) []string {
	t.Helper()
	vals := make([]string, len(addrs))
	for i, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, DisableIdentity: true})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := c.Get(ctx, key).Result()
		cancel()
		c.Close()
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

// Count counts the entries of vals equal to want.
func Count(vals []string, want string) int {
	n := 0
	for _, v := range vals {
		if v == want {
			n++
		}
	}
	return n
}

// Page gets path (e.g. "/metrics") from the instance's HTTP handler and
// returns the status code and the body.
func (in *Instance) Page(t testing.TB, path string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(metrics.Handler(in.Metrics))
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
