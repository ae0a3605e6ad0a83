package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// The views of one Cluster: made once, database 0's is the Cluster.
func TestClusterDBViews(t *testing.T) {
	c := slowRetryCluster(t, memNodes(3))
	defer c.Close()
	if c.DB(0) != c || c.Index() != 0 {
		t.Fatal("DB(0) is not the Cluster itself")
	}
	for n := range quorum.DBs {
		if v := c.DB(n); v != c.DB(n) || v.Index() != n || v.DB(0) != c {
			t.Fatalf("DB(%d) is not one view of database %d sharing the Cluster", n, n)
		}
	}
}

// Every round of a view runs in its database: the same key in db 0 and
// db 3 is two locks, each stored in its own db of every node.
func TestClusterDBRoundsStampDB(t *testing.T) {
	nodes := memNodes(3)
	c := slowRetryCluster(t, nodes)
	defer c.Close()
	ctx := context.Background()
	l3, err := c.DB(3).Acquire(ctx, wkey, "t3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, wkey, "t0", time.Minute); err != nil {
		t.Fatalf("Acquire in db 0 with db 3 held: %v", err)
	}
	for _, n := range nodes {
		for db, want := range map[int]string{0: "t0", 3: "t3", 4: ""} {
			if rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Get, Key: wkey, DB: db}); rep.Token != want {
				t.Fatalf("%s db %d holds %q, want %q", n.Name(), db, rep.Token, want)
			}
		}
	}
	if hd, err := c.DB(3).Get(ctx, wkey); err != nil || hd.Token != l3.Token {
		t.Fatalf("Get in db 3 = %+v, %v", hd, err)
	}
}

// A release in db 2 wakes db 2's waiter and not the waiter of the same key
// in db 0.
func TestWaitWokenInItsDB(t *testing.T) {
	c := slowRetryCluster(t, memNodes(3))
	defer c.Close()
	d2 := c.DB(2)
	mustAcquire(t, c, "h0")
	mustAcquire(t, d2, "h2")
	w0 := waitAsync(t, c, "w0", time.Hour)
	w2 := waitAsync(t, d2, "w2", time.Hour)
	if ok, err := d2.Release(context.Background(), wkey, "h2"); !ok || err != nil {
		t.Fatalf("Release in db 2 = %v, %v", ok, err)
	}
	if a := recv(t, w2, prompt); a.err != nil || a.l.Token != "w2" {
		t.Fatalf("db 2 waiter: %+v", a)
	}
	if n := c.Waiters(wkey); n != 1 {
		t.Fatalf("db 0 waiters = %d, want 1 still waiting", n)
	}
	if ok, err := c.Release(context.Background(), wkey, "h0"); !ok || err != nil {
		t.Fatalf("Release in db 0 = %v, %v", ok, err)
	}
	if a := recv(t, w0, prompt); a.err != nil || a.l.Token != "w0" {
		t.Fatalf("db 0 waiter: %+v", a)
	}
}

// A release that one node missed is sent again in its own database.
func TestPendingReleaseRetriedInItsDB(t *testing.T) {
	mems := []*embedded.Memory{embedded.New("a"), embedded.New("b"), embedded.New("c")}
	first := faultnode.Wrap(mems[0])
	nodes := []quorum.Node{first, mems[1], mems[2]}
	cfg := quorum.DefaultConfig()
	cfg.ReleaseRetry = 10 * time.Millisecond
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	d3 := c.DB(3)
	if _, err := d3.Acquire(ctx, wkey, "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	first.SetFault(errors.New("down"))
	if ok, err := d3.Release(ctx, wkey, "t"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if p := c.PendingReleases(); p[0] != 1 {
		t.Fatalf("pending %v, want one on the failed node", p)
	}
	first.SetFault(nil)
	pollUntil(t, "the retry to end", func() bool { return c.PendingReleases()[0] == 0 })
	if rep := quorum.Call(ctx, mems[0], quorum.Cmd{Kind: quorum.Get, Key: wkey, DB: 3}); rep.OK {
		t.Fatalf("db 3 of the node that missed the release still holds %q", rep.Token)
	}
}
