package faulttest

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faults"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// erring is one way for a backend to answer with an error instead of a
// vote. start returns the address of a backend that fails that way.
type erring struct {
	name string
	// want is in the error the backend answers SET with; alternatives are
	// separated by "|" (a full server writes its error and closes at once,
	// so the client may see the reset before the text).
	want  string
	start func(t *testing.T) string
}

var erringBackends = []erring{
	{"maxclients", "max number of clients|connection reset|EOF", func(t *testing.T) string {
		s := redistest.Start(t, "--maxclients", "1")
		occupy(t, s.Addr())
		return s.Addr()
	}},
	{"LOADING", "LOADING", func(t *testing.T) string {
		e := faults.Start(t, 1)
		e.Backends[0].Proxy.SetError("LOADING Redis is loading the dataset in memory")
		return e.Addrs()[0]
	}},
	{"READONLY", "READONLY", func(t *testing.T) string {
		master := redistest.Start(t)
		return redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port())).Addr()
	}},
	{"OOM", "OOM", func(t *testing.T) string {
		return redistest.Start(t, "--maxmemory", "1").Addr()
	}},
}

// occupy takes the one client slot of a --maxclients 1 server for the
// rest of the test.
func occupy(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("PING\r\n"))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("occupy the only client slot: %q %v", line, err)
	}
	c.SetDeadline(time.Time{})
}

// TestBackendErrorsAreNo: backends that answer -OOM, -READONLY, -LOADING
// or refuse the connection (maxclients) are "no" votes. Two of them out of
// three: never a grant. One of them: the two healthy backends still grant.
func TestBackendErrorsAreNo(t *testing.T) {
	for _, eb := range erringBackends {
		t.Run(eb.name, func(t *testing.T) {
			healthy := faults.Start(t, 2)
			bad := []string{eb.start(t), eb.start(t)}
			// The error is really what the backend answers.
			n := node(t, bad[0])
			_, err := nodetest.SetNX(ctxT(t, 5*time.Second), n, "probe", "x", time.Second)
			if err == nil || !containsAny(err.Error(), eb.want) {
				t.Fatalf("the %s backend answered SET NX with %v", eb.name, err)
			}

			c := cluster(t, healthy.Addrs()[0], bad[0], bad[1])
			for range 3 {
				_, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
				if !errors.Is(err, quorum.ErrNoQuorum) {
					t.Fatalf("acquire over two %s backends: %v, want NOQUORUM", eb.name, err)
				}
			}
			c = cluster(t, healthy.Addrs()[0], healthy.Addrs()[1], bad[0])
			l, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
			if err != nil {
				t.Fatalf("acquire with one %s backend: %v", eb.name, err)
			}
			c.Release(ctxT(t, 5*time.Second), "k", l.Token)
		})
	}
}

func node(t *testing.T, addr string) quorum.Node {
	t.Helper()
	n, err := backend.NewRedis(addr, backend.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func cluster(t *testing.T, addrs ...string) *quorum.Cluster {
	t.Helper()
	nodes := make([]quorum.Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = node(t, a)
	}
	c, err := quorum.New(nodes, defaultCfg())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// containsAny reports whether s contains one of the "|"-separated words.
func containsAny(s, words string) bool {
	for _, w := range strings.Split(words, "|") {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
