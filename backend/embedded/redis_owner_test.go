package embedded

import (
	"context"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// ownerNodes runs f on a fresh Redis node (over a flushed redis-server)
// and on a fresh in-memory node: both must store owner holds alike.
func ownerNodes(t *testing.T, f func(t *testing.T, n quorum.Node)) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	t.Run("redis", func(t *testing.T) {
		if err := srv.Client().FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		f(t, r)
	})
	t.Run("memory", func(t *testing.T) {
		m := New("m")
		t.Cleanup(func() { _ = m.Close() })
		f(t, m)
	})
}

const (
	oKey   = "k"
	oHolds = "redlockd:holds:{k}" // quorum.HoldsKey(oKey), where Do keeps it
)

var oPrefix = quorum.OwnerPrefix("a b") // an owner id with a space

func hold(t *testing.T, n quorum.Node, mark, token string, ttl time.Duration) (string, int64, bool) {
	t.Helper()
	tok, holds, ok, err := nodetest.HoldOwner(t.Context(), n, oKey, mark, oPrefix, token, ttl)
	if err != nil {
		t.Fatalf("HoldOwner(%s): %v", mark, err)
	}
	return tok, holds, ok
}

func undo(t *testing.T, n quorum.Node, mark, keep string) bool {
	t.Helper()
	ok, err := nodetest.UndoHold(t.Context(), n, oKey, mark, keep, time.Minute)
	if err != nil {
		t.Fatalf("UndoHold(%s): %v", mark, err)
	}
	return ok
}

// stored is the node's lock token and hold count, read as LOCKINFO reads
// them ("" and 0 when free).
func stored(t *testing.T, n quorum.Node) (string, int64) {
	t.Helper()
	ctx := context.Background()
	tok, _, ok, err := nodetest.Get(ctx, n, oKey)
	if err != nil || !ok {
		return "", 0
	}
	h, _, ok, err := nodetest.Get(ctx, n, oHolds)
	if err != nil || !ok {
		return tok, 1
	}
	ht, c, ok := quorum.ParseHolds(h)
	if !ok || ht != tok {
		return tok, 1
	}
	return tok, c
}

func wantStored(t *testing.T, n quorum.Node, token string, holds int64) {
	t.Helper()
	if tok, c := stored(t, n); tok != token || c != holds {
		t.Fatalf("stored %q with %d holds, want %q with %d", tok, c, token, holds)
	}
}

// A round's hold goes to the owner's token where it stands and to the
// round's token where the key is free; an undo takes back exactly that
// hold, once, and the undone round adds nothing if it comes again.
func TestHoldOwnerUndo(t *testing.T) {
	t1, t2 := oPrefix+"1", oPrefix+"2"
	ownerNodes(t, func(t *testing.T, n quorum.Node) {
		if tok, c, ok := hold(t, n, "m1", t1, time.Minute); !ok || tok != t1 || c != 1 {
			t.Fatalf("first hold = %q %d %v", tok, c, ok)
		}
		if tok, c, ok := hold(t, n, "m2", t2, time.Minute); !ok || tok != t1 || c != 2 {
			t.Fatalf("reentry = %q %d %v, want %q 2", tok, c, ok, t1)
		}
		if tok, c, ok := hold(t, n, "m2", t2, time.Minute); !ok || tok != t1 || c != 2 {
			t.Fatalf("a repeated round = %q %d %v, want its hold, not another", tok, c, ok)
		}
		if !undo(t, n, "m2", "") {
			t.Fatal("undo of a landed hold: nothing taken back")
		}
		wantStored(t, n, t1, 1)
		if undo(t, n, "m2", "") {
			t.Fatal("a repeated undo took back another hold")
		}
		if _, _, ok := hold(t, n, "m2", t2, time.Minute); ok {
			t.Fatal("an undone round added a hold when it came again")
		}
		wantStored(t, n, t1, 1)
		if _, _, ok := hold(t, n, "m3", t2, time.Minute); !ok || undo(t, n, "m3", t1) {
			t.Fatal("an undo that keeps the granted token took its hold back")
		}
		wantStored(t, n, t1, 2)
	})
}

// A round that arrives after its undo adds nothing, not even a fresh lock,
// unless the undo keeps a granted token that the round finds; the undo of
// a lock's only hold frees it.
func TestHoldOwnerLateAndLast(t *testing.T) {
	ownerNodes(t, func(t *testing.T, n quorum.Node) {
		if undo(t, n, "late", "") {
			t.Fatal("undo of a round that never came took something back")
		}
		if _, _, ok := hold(t, n, "late", oPrefix+"x", time.Minute); ok {
			t.Fatal("a round arriving after its undo took a hold")
		}
		wantStored(t, n, "", 0)
		// Undone before it arrived while t1 was granted: it may still add
		// a hold to t1, and to nothing else.
		t1 := oPrefix + "1"
		hold(t, n, "m1", t1, time.Minute)
		if undo(t, n, "late-granted", t1) || undo(t, n, "late-other", oPrefix+"other") {
			t.Fatal("undo of a round that never came took something back")
		}
		if _, _, ok := hold(t, n, "late-other", oPrefix+"z", time.Minute); ok {
			t.Fatal("a late round took a hold of a token that was not granted")
		}
		if tok, c, ok := hold(t, n, "late-granted", oPrefix+"z", time.Minute); !ok || tok != t1 || c != 2 {
			t.Fatalf("a late round of a granted token = %q %d %v, want its hold of %q", tok, c, ok, t1)
		}
		undo(t, n, "m1", "")
		undo(t, n, "late-granted", "")
		wantStored(t, n, "", 0)
		hold(t, n, "only", oPrefix+"y", time.Minute)
		if !undo(t, n, "only", "") {
			t.Fatal("undo of the only hold: nothing taken back")
		}
		wantStored(t, n, "", 0)
		if _, _, ok, err := nodetest.Get(t.Context(), n, oHolds); err != nil || ok {
			t.Fatalf("the hold count outlived its lock (read: %v)", err)
		}
	})
}

// Another owner's lock gets no hold; a reentry with a shorter ttl does not
// cut the lock's ttl; counts of an owner id with a space add up.
func TestHoldOwnerOthersAndTTL(t *testing.T) {
	ownerNodes(t, func(t *testing.T, n quorum.Node) {
		if _, _, ok, err := nodetest.HoldOwner(t.Context(), n, oKey, "v", quorum.OwnerPrefix("a"), quorum.OwnerPrefix("a")+"v", time.Minute); err != nil || !ok {
			t.Fatal("owner a got no lock on a free key")
		}
		if _, _, ok := hold(t, n, "w", oPrefix+"w", time.Minute); ok {
			t.Fatal("owner \"a b\" got a hold of owner a's lock")
		}
		if _, err := nodetest.Delete(t.Context(), n, oKey, false); err != nil {
			t.Fatal(err)
		}
		hold(t, n, "long", oPrefix+"1", time.Minute)
		hold(t, n, "short", oPrefix+"2", 100*time.Millisecond)
		hold(t, n, "third", oPrefix+"3", 100*time.Millisecond)
		_, pttl, _, err := nodetest.Get(t.Context(), n, oKey)
		if err != nil || pttl < 30*time.Second {
			t.Fatalf("pttl after a shorter reentry = %v, %v; want the minute kept", pttl, err)
		}
		wantStored(t, n, oPrefix+"1", 3)
		if left, ok, err := nodetest.Unhold(t.Context(), n, oKey, oPrefix+"1"); err != nil || !ok || left != 2 {
			t.Fatalf("Unhold = %d %v %v, want 2 left", left, ok, err)
		}
	})
}
