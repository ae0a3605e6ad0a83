package backend

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// A user's release (the announcing compare-and-delete, a script over the
// lock key, its wait mark, fair queue and reservation, of which only the
// lock key exists) in a slot under migration gets TRYAGAIN from the
// migrating master while that one holds the lock key, then ASK to the
// importing master and TRYAGAIN there (the other keys are absent) once
// the key has moved, for as long as the migration lasts. The release
// waits the migration out within its deadline: neither the TRYAGAIN nor
// the ASK met again on every send reaches the caller, and once the slot
// has moved both releases delete their key.
func TestClusterReleaseWaitsOutMigration(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	const tag = "mig"
	s := slot.Of(tag)
	from := c.Masters[s*len(c.Masters)/slot.Count]
	to := c.Masters[0]
	if to == from {
		to = c.Masters[1]
	}
	keyA, keyB := "{"+tag+"}:a", "{"+tag+"}:b"
	for _, k := range []string{keyA, keyB} {
		if err := from.Client().Set(t.Context(), k, "tok", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := NewCluster("cluster://"+from.Addr(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, ok, err := nodetest.Get(t.Context(), cl, keyA); err != nil || !ok {
		t.Fatalf("GET %s before the migration: present %v, %v", keyA, ok, err)
	}

	release := func(key string) <-chan quorum.Reply {
		ch := make(chan quorum.Reply, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ch <- quorum.Call(ctx, cl, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: "tok", Notify: true})
		}()
		return ch
	}
	// Each phase lasts far longer than a few sends: a release that gave
	// up after a count of TRYAGAINs or of redirects would answer within it.
	const phase = 500 * time.Millisecond
	pending := func(ch <-chan quorum.Reply, what string) {
		t.Helper()
		select {
		case rep := <-ch:
			t.Fatalf("the release of %s answered %+v; want it to wait for the migration's end", what, rep)
		case <-time.After(phase):
		}
	}

	c.BeginMigration(t, s, from, to)
	a := release(keyA) // the keys are still at the migrating master: TRYAGAIN
	pending(a, keyA+" while its key was at the migrating master")
	c.MoveKeys(t, s, from, to)
	b := release(keyB) // ASK, then TRYAGAIN at the importing master
	pending(b, keyB+" while its key was at the importing master")
	pending(a, keyA+" while its key was at the importing master")
	c.EndMigration(t, s, from, to)

	for _, r := range []struct {
		key string
		ch  <-chan quorum.Reply
	}{{keyA, a}, {keyB, b}} {
		rep := <-r.ch
		if rep.Err != nil || !rep.OK {
			t.Fatalf("the release of %s across the migration = ok %v, %v; want it deleted", r.key, rep.OK, rep.Err)
		}
		if n, err := to.Client().Exists(t.Context(), r.key).Result(); err != nil || n != 0 {
			t.Fatalf("%s at the new master after its release: exists %d, %v", r.key, n, err)
		}
	}
}
