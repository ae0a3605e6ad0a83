package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/quorum"
)

// A pipelined batch of locks runs without a worker per command: each SET
// NX PX is started in its asynchronous form and answered by its round's
// last reply (from delayed in-memory nodes' timers, and from real
// redis-servers' connection readers). Commands without such
// a form (GET) still go to workers, which shows the count is live.
func TestPipelinedLocksNeedNoWorker(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		var nodes []quorum.Node
		for i := range 3 {
			m := backend.NewMemory(fmt.Sprintf("slow-%d", i))
			m.SetDelay(2 * time.Millisecond) // every reply comes from another goroutine
			nodes = append(nodes, m)
		}
		pipelineNeedsNoWorker(t, nodes)
	})
	t.Run("redis", func(t *testing.T) {
		var nodes []quorum.Node
		for range 3 {
			n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			nodes = append(nodes, n)
		}
		pipelineNeedsNoWorker(t, nodes)
	})
}

func pipelineNeedsNoWorker(t *testing.T, nodes []quorum.Node) {
	const depth = 16
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second // a loaded machine must not turn this into a test of timeouts
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	var sets, gets []byte
	var want strings.Builder
	for i := range depth {
		k := fmt.Sprintf("k%d", i)
		sets = append(sets, request("SET", k, "tok", "NX", "PX", "10000")...)
		gets = append(gets, request("GET", k)...)
		want.WriteString("+OK\r\n")
	}
	s, st := replayServer(t, cluster, [][]byte{sets, gets})
	t.Cleanup(func() { close(s.work) })
	batch, err := st.rd.next()
	if err != nil || len(batch) != depth {
		t.Fatalf("next = %d requests, %v", len(batch), err)
	}
	s.serveBatch(st, batch)
	if out := string(st.nc.(*replayConn).out); out != want.String() {
		t.Fatalf("replies %q, want %q", out, want.String())
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined locks ran on a worker, want none", n, depth)
	}
	if batch, err = st.rd.next(); err != nil {
		t.Fatal(err)
	}
	s.serveBatch(st, batch)
	if n := s.tasks.Load(); n != depth-1 {
		t.Fatalf("%d pipelined GETs ran on a worker, want %d", n, depth-1)
	}
}
