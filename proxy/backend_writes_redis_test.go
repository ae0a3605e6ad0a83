package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// serverReads is what a redis-server counts in total_reads_processed:
// one per read of a client's socket that brought data. The INFO that
// asks is one of them.
func serverReads(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.Client().Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "total_reads_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_reads_processed in INFO stats:\n%s", info)
	return 0
}

// TestBackendWritesPerBatch: a pipelined batch of rounds reaches each
// backend connection as one write. Each redis-server counts the reads that
// brought it data; with the health checks out of the way, those are the
// batches' and the INFOs'. A batch written in pieces shows as a read per
// piece wherever the server caught up between them, as it does on a
// batch started while the connection's writer is already awake: so each
// batch starts once the one before has landed on every server, and the
// horizon raise that the first batch sets off is left out of the count.
func TestBackendWritesPerBatch(t *testing.T) {
	const batches, depth = 10, 16
	servers := redistest.StartN(t, 3)
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		// One connection per node, no health checks during the count:
		// every read the servers count is a batch's or the INFO's.
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{Conns: 1, HealthInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	// polls counts the commands the test sends the servers itself while
	// counting, one read each.
	polls := make([]int64, len(servers))
	// landed waits until every server holds keys: the replies follow a
	// majority's answers, and a batch still on its way to the third
	// server when the next one starts may leave with it in two pieces.
	landed := func(keys ...string) {
		t.Helper()
		for i, s := range servers {
			for try := 0; ; try++ {
				polls[i]++
				n, err := s.Client().Exists(context.Background(), keys...).Result()
				if err != nil {
					t.Fatal(err)
				}
				if n == int64(len(keys)) {
					break
				}
				if try == 2000 {
					t.Fatalf("backend %d holds %d of %q", i, n, keys)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	batch := func(b int) {
		var sb strings.Builder
		var keys []string
		for i := range depth {
			k := fmt.Sprintf("lock:%d.%d", b, i)
			keys = append(keys, k)
			fmt.Fprintf(&sb, "*6\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n", len(k), k)
		}
		r.send(sb.String())
		for range depth {
			r.expect("+OK\r\n")
		}
		landed(keys...)
	}
	// Batch -1 dials the lines and loads the scripts, and its yeses raise
	// each node's lock horizon in a write of its own: not counted.
	batch(-1)
	landed(quorum.HorizonKey)
	before := make([]int64, len(servers))
	for i, s := range servers {
		before[i] = serverReads(t, s)
		polls[i] = 0
	}
	for b := range batches {
		batch(b)
	}
	for i, s := range servers {
		// The INFO that reads the count is one read of its own.
		if got := serverReads(t, s) - before[i] - 1 - polls[i]; got > batches {
			t.Errorf("backend %d read %d times for %d pipelined batches of %d rounds; want at most one read per batch",
				i, got, batches, depth)
		}
	}
}
