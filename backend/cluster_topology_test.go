package backend

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// Reading the topology again (every health interval, after each MOVED)
// reuses the connection of the last read: a cluster node does not dial
// its seed once a second.
func TestClusterTopologyReadsKeepTheirConnection(t *testing.T) {
	c := redistest.StartCluster(t, 1, 0)
	seed := c.Servers()[0]
	cl, err := NewCluster("cluster://"+seed.Addr(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rdb := seed.Client()
	defer rdb.Close()
	received := func() int {
		t.Helper()
		info, err := rdb.Info(context.Background(), "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatal("no total_connections_received in INFO stats")
		return 0
	}
	if err := cl.readTopology(); err != nil {
		t.Fatal(err)
	}
	before := received()
	for range 5 {
		if err := cl.readTopology(); err != nil {
			t.Fatal(err)
		}
	}
	if got := received() - before; got != 0 {
		t.Errorf("5 topology reads made %d connections, want 0", got)
	}
	// A connection that broke is replaced by one new connection.
	h := cl.topologyConn(seed.Addr())
	h.mu.Lock()
	h.cur.NC.Close()
	h.mu.Unlock()
	before = received()
	if err := cl.readTopology(); err != nil {
		t.Fatalf("after the connection broke: %v", err)
	}
	if got := received() - before; got != 1 {
		t.Errorf("the read after a broken connection made %d connections, want 1", got)
	}
}
