package faults

import (
	"testing"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Backend is one redis-server with a fault proxy in front of it.
type Backend struct {
	*redistest.Server
	Proxy *Proxy
}

// Env is a set of independent backends for one test, all stopped by the
// test's cleanup.
type Env struct {
	Backends []*Backend
}

// Start runs n redis-servers (with args appended to redistest's defaults,
// e.g. "--appendonly", "yes", "--appendfsync", "always") and a proxy in
// front of each.
func Start(t testing.TB, n int, args ...string) *Env {
	t.Helper()
	e := &Env{}
	for _, s := range redistest.StartN(t, n, args...) {
		p, err := Listen(s.Addr())
		if err != nil {
			t.Fatalf("faults: proxy: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		e.Backends = append(e.Backends, &Backend{Server: s, Proxy: p})
	}
	return e
}

// Addrs are the proxies' addresses, the ones a lock service should use.
func (e *Env) Addrs() []string {
	out := make([]string, len(e.Backends))
	for i, b := range e.Backends {
		out[i] = b.Proxy.Addr()
	}
	return out
}

// Nodes opens one go-redis node per backend, through its proxy; they are
// closed by the test's cleanup.
func (e *Env) Nodes(t testing.TB) []quorum.Node {
	t.Helper()
	nodes := make([]quorum.Node, len(e.Backends))
	for i, addr := range e.Addrs() {
		n, err := backend.NewRedis(addr, backend.RedisOptions{})
		if err != nil {
			t.Fatalf("faults: node %s: %v", addr, err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
	}
	return nodes
}

// Cluster builds a lock cluster over fresh nodes of every backend, closed
// by the test's cleanup.
func (e *Env) Cluster(t testing.TB, cfg quorum.Config) *quorum.Cluster {
	t.Helper()
	c, err := quorum.New(e.Nodes(t), cfg)
	if err != nil {
		t.Fatalf("faults: cluster: %v", err)
	}
	t.Cleanup(func() { c.Close() }) // before the nodes close: cleanups run last first
	return c
}

// Each runs f on the backends with the given indexes.
func (e *Env) Each(idx []int, f func(*Backend)) {
	for _, i := range idx {
		f(e.Backends[i])
	}
}
