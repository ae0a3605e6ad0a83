package backend

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// awaitReport waits for key (or, with key "*", a flush) to be reported.
func awaitReport(t *testing.T, ch <-chan string, key string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case k := <-ch:
			if k == key {
				return
			}
		case <-deadline:
			t.Fatalf("no report of %q", key)
		}
	}
}

// TestRedisReportsChanges: a Redis node watched for changes reports each
// key written on its server, by anyone, and its expiry, in any database;
// it reports a flush when its link for the reports is lost, and again
// when it is back after the server restarted (what changed meanwhile was
// not heard).
func TestRedisReportsChanges(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ch := nodetest.WatchInvalidated(r)
	awaitReport(t, ch, "*") // the link is up: nothing heard before it
	ctx := context.Background()
	direct := srv.Client()
	if err := direct.Set(ctx, "k1", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	awaitReport(t, ch, "k1")
	direct.Do(ctx, "SELECT", "4")
	direct.Set(ctx, "k2", "v", 200*time.Millisecond)
	awaitReport(t, ch, "k2") // the write
	awaitReport(t, ch, "k2") // the expiry
	srv.Restart(t)
	awaitReport(t, ch, "*") // the link was lost
	awaitReport(t, ch, "*") // and is back
	if err := srv.Client().Set(ctx, "k3", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	awaitReport(t, ch, "k3")
}

// TestRedisUnreportedChangesFlush: a server that refuses to report
// changes (here CLIENT is renamed away) has its watchers told "anything
// may have changed" every health interval, never silence.
func TestRedisUnreportedChangesFlush(t *testing.T) {
	srv := redistest.Start(t, "--rename-command", "CLIENT", "")
	r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ch := nodetest.WatchInvalidated(r)
	for range 4 {
		awaitReport(t, ch, "*")
	}
}

// TestClusterReportsChanges: a Cluster node watched for changes reports
// the keys written on each master, each master reporting its own slots'.
func TestClusterReportsChanges(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	cl, err := NewCluster("cluster://"+c.Masters[0].Addr(), RedisOptions{HealthInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ch := nodetest.WatchInvalidated(cl)
	for i, m := range c.Masters {
		key := keyOnMaster(i, len(c.Masters))
		awaitWritten(t, ch, key, func() {
			if err := m.Client().Set(t.Context(), key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// awaitWritten writes key until its report arrives: a write before the
// node's link for the reports is up goes unheard (the link reports "*"
// when it comes up).
func awaitWritten(t *testing.T, ch <-chan string, key string, write func()) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		write()
		retry := time.After(100 * time.Millisecond)
		for waiting := true; waiting; {
			select {
			case k := <-ch:
				if k == key {
					return
				}
			case <-retry:
				waiting = false
			case <-deadline:
				t.Fatalf("no report of %q", key)
			}
		}
	}
}

// keyOnMaster is a key of a slot that master i of n serves (each serves
// an equal share of the slots, in order).
func keyOnMaster(i, n int) string {
	for j := 0; ; j++ {
		k := fmt.Sprintf("track:%d", j)
		if slot.Of(k)*n/slot.Count == i {
			return k
		}
	}
}
