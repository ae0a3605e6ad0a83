package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// readers is m's count of live readers of "k" (-1: not held shared).
func readers(t *testing.T, m quorum.Node) int64 {
	t.Helper()
	rep := quorum.Call(context.Background(), m, quorum.Cmd{Kind: quorum.ReadShared, Key: "k"})
	if rep.Err != nil {
		t.Fatal(rep.Err)
	}
	if !rep.OK {
		return -1
	}
	return rep.N
}

func wantReaders(t *testing.T, mems []*embedded.Memory, n int64) {
	t.Helper()
	for _, m := range mems {
		if got := readers(t, m); got != n {
			t.Fatalf("%s: %d readers, want %d", m.Name(), got, n)
		}
	}
}

// Readers share the key and exclude writers; the last reader's release
// frees it, and a writer then excludes readers.
func TestSharedReadersExcludeWriter(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	var locks []quorum.Lock
	for range 3 {
		l, err := c.AcquireShared(ctx, "k", ownerTTL)
		if err != nil {
			t.Fatalf("AcquireShared: %v", err)
		}
		if !quorum.IsSharedToken(l.Token) {
			t.Fatalf("reader token %q is not a shared token", l.Token)
		}
		locks = append(locks, l)
	}
	wantReaders(t, m, 3)
	if _, err := c.Acquire(ctx, "k", "w", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("writer among readers: %v, want ErrNotAcquired", err)
	}
	if _, err := c.LockOwner(ctx, "k", "o", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("owner among readers: %v, want ErrNotAcquired", err)
	}
	for i, l := range locks {
		ok, err := c.Release(ctx, "k", l.Token)
		if !ok || err != nil {
			t.Fatalf("Release reader %d: %v %v", i, ok, err)
		}
	}
	wantState(t, m[0], "", 0)
	if _, err := c.Acquire(ctx, "k", "w", ownerTTL); err != nil {
		t.Fatalf("writer after the readers: %v", err)
	}
	if _, err := c.AcquireShared(ctx, "k", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("reader while a writer holds: %v, want ErrNotAcquired", err)
	}
}

// Each reader expires on its own: a short reader's expiry leaves the long
// one holding, and the marker's ttl follows the longest.
func TestSharedReaderExpiresAlone(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	short, err := c.AcquireShared(ctx, "k", 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireShared(ctx, "k", ownerTTL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); readers(t, m[0]) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the short reader never expired: %d readers", readers(t, m[0]))
		}
		time.Sleep(5 * time.Millisecond) // polling the node's clock
	}
	if v, err := c.Renew(ctx, "k", short.Token, ownerTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("Renew of an expired reader = %v %v, want ErrNotHeld", v, err)
	}
	_, pttl, ok, _ := nodetest.Get(ctx, m[0], "k")
	if !ok || pttl < ownerTTL/2 {
		t.Fatalf("marker pttl %v (present %v), want the long reader's", pttl, ok)
	}
}

// A reader round that fails (a writer holds a majority) removes its reader
// where it landed, and only it: an earlier reader there stays.
func TestSharedFailedRoundUndone(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	first, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatal(err)
	}
	// A force on two nodes: a writer there, the first reader on m[0] only.
	for _, n := range m[1:] {
		if err := nodetest.Set(ctx, n, "k", "writer", ownerTTL); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AcquireShared(ctx, "k", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("AcquireShared = %v, want ErrNotAcquired", err)
	}
	if n := readers(t, m[0]); n != 1 {
		t.Fatalf("m1 keeps %d readers after the undo, want the first one only", n)
	}
	if _, err := c.Renew(ctx, "k", first.Token, ownerTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("Renew of a reader held on a minority = %v, want ErrNotHeld", err)
	}
}

// Renew and release route by token: the marker is no reader and cannot
// free the readers.
func TestSharedMarkerIsNoReader(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	l, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Release(ctx, "k", quorum.SharedMarker); ok || err != nil {
		t.Fatalf("Release of the marker = %v %v, want false", ok, err)
	}
	if _, err := c.Renew(ctx, "k", quorum.SharedMarker, ownerTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("Renew of the marker = %v, want ErrNotHeld", err)
	}
	wantReaders(t, m, 1)
	if v, err := c.Renew(ctx, "k", l.Token, 2*ownerTTL); err != nil || v <= ownerTTL {
		t.Fatalf("Renew of the reader = %v %v", v, err)
	}
}

// A waiting writer keeps new readers out; the last reader's release lets
// it in. A writer whose caller gives up takes its mark with it.
func TestSharedWriterWaitingKeepsReadersOut(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	r, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { _, err := c.Acquire(wctx, "k", "w1", ownerTTL, quorum.Wait(10*time.Second)); gone <- err }()
	waitMarked(t, m)
	if _, err := c.AcquireShared(ctx, "k", ownerTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("a new reader while a writer waits: %v, want ErrNotAcquired", err)
	}
	cancel()
	if err := <-gone; err == nil {
		t.Fatalf("the cancelled writer: %v", err)
	}
	// In-memory nodes answer within Do: the drop has run everywhere.
	for _, x := range m {
		if _, _, ok, err := nodetest.Get(ctx, x, quorum.WriterKey("k")); err != nil || ok {
			t.Fatalf("%s: the writer's mark outlived its cancelled wait (read: %v)", x.Name(), err)
		}
	}
	second, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatalf("a reader after the writer gave up: %v", err)
	}
	got := make(chan error, 1)
	go func() { _, err := c.Acquire(ctx, "k", "w2", ownerTTL, quorum.Wait(10*time.Second)); got <- err }()
	waitMarked(t, m)
	ok, err := c.Release(ctx, "k", r.Token)
	if !ok || err != nil {
		t.Fatalf("release of the first reader: %v %v", ok, err)
	}
	// The second reader (taken above) still holds: the writer waits on.
	select {
	case err := <-got:
		t.Fatalf("the writer got in among a reader: %v", err)
	default:
	}
	if ok, err := c.Release(ctx, "k", second.Token); !ok || err != nil {
		t.Fatalf("release of the second reader: %v %v", ok, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the writer after the readers: %v", err)
	}
	if _, _, ok, err := nodetest.Get(ctx, m[0], quorum.WriterKey("k")); err != nil || ok {
		t.Fatalf("the writer's mark outlived its grant (read: %v)", err)
	}
}

// waitMarked waits until every node has a writer's mark on "k".
func waitMarked(t *testing.T, m []*embedded.Memory) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		n := 0
		for _, x := range m {
			if _, _, ok, err := nodetest.Get(context.Background(), x, quorum.WriterKey("k")); err == nil && ok {
				n++
			}
		}
		if n == len(m) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no writer's mark")
		}
		time.Sleep(2 * time.Millisecond) // polling the nodes
	}
}

// A reader's release that a node missed is sent again once the node
// answers, as a reader's release: the reader goes there too.
func TestSharedReleaseRetried(t *testing.T) {
	c, m, fs := ownerCluster(t, nil)
	first := fs[0]
	ctx := context.Background()
	l, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatal(err)
	}
	first.SetFault(errors.New("down"))
	if ok, err := c.Release(ctx, "k", l.Token); !ok || err != nil {
		t.Fatalf("Release with a node down = %v %v", ok, err)
	}
	first.SetFault(nil)
	for deadline := time.Now().Add(5 * time.Second); readers(t, m[0]) != -1; {
		if time.Now().After(deadline) {
			t.Fatalf("the missed release never reached m1: %d readers", readers(t, m[0]))
		}
		time.Sleep(5 * time.Millisecond) // the retrier runs every 20ms
	}
}

// A kept reader's renewal puts the reader back on a node that lost it,
// as a reader.
func TestSharedRenewKeptRestoresReader(t *testing.T) {
	c, m, _ := ownerCluster(t, nil)
	ctx := context.Background()
	l, err := c.AcquireShared(ctx, "k", ownerTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodetest.Delete(ctx, m[0], "k", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewKept(ctx, "k", l.Token, ownerTTL); err != nil {
		t.Fatalf("RenewKept: %v", err)
	}
	wantReaders(t, m, 1)
	if ok, err := c.Release(ctx, "k", l.Token); !ok || err != nil {
		t.Fatalf("Release after the restore = %v %v", ok, err)
	}
	wantState(t, m[0], "", 0)
}
