package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// sharedStep is one command of a read-write lock's life on one node and
// the reply it must get (OK, and N where the kind reports one).
type sharedStep struct {
	name string
	cmd  quorum.Cmd
	ok   bool
	n    int64
}

func rw(kind quorum.CmdKind, token string, ttl time.Duration) quorum.Cmd {
	return quorum.Cmd{Kind: kind, Key: "k", Token: token, TTL: ttl}
}

// sharedLife: readers share the key and exclude writers, a waiting
// writer's mark keeps new readers out, the last reader frees the key, and
// a writer then keeps readers out. Each step's reply is the same on a
// real server and on the in-memory node.
var sharedLife = []sharedStep{
	{"reader 1", rw(quorum.AcquireShared, "shared:1", time.Minute), true, 0},
	{"reader 2", rw(quorum.AcquireShared, "shared:2", time.Minute), true, 0},
	{"two readers", quorum.Cmd{Kind: quorum.ReadShared, Key: "k"}, true, 2},
	{"SET NX among readers", rw(quorum.SetNX, "w", time.Minute), false, 0},
	{"owner among readers", quorum.Cmd{Kind: quorum.HoldOwner, Key: "k", Token: "owner:1:o:x", Prefix: "owner:1:o:", Mark: "redlockd:hold:{k}:x", TTL: time.Minute}, false, 0},
	{"marker released", rw(quorum.ReleaseShared, quorum.SharedMarker, 0), false, 0},
	{"marker renewed", rw(quorum.ExtendShared, quorum.SharedMarker, time.Minute), false, 0},
	{"reader renewed", rw(quorum.ExtendShared, "shared:1", 2*time.Minute), true, 0},
	{"stranger renewed", rw(quorum.ExtendShared, "shared:9", time.Minute), false, 0},
	{"writer waits", quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "w", TTL: time.Minute, Add: time.Minute}, false, 0},
	{"reader while a writer waits", quorum.Cmd{Kind: quorum.AcquireShared, Key: "k", Token: "shared:3", TTL: time.Minute, Add: time.Minute}, false, 0},
	{"reader 1 leaves", rw(quorum.ReleaseShared, "shared:1", 0), true, 1},
	{"reader 1 again", rw(quorum.ReleaseShared, "shared:1", 0), false, 0},
	{"one reader", quorum.Cmd{Kind: quorum.ReadShared, Key: "k"}, true, 1},
	{"last reader leaves", rw(quorum.ReleaseShared, "shared:2", 0), true, 1},
	{"free", quorum.Cmd{Kind: quorum.ReadShared, Key: "k"}, false, 0},
	{"released when free", rw(quorum.ReleaseShared, "shared:2", 0), false, -1},
	{"waiting writer gets in", quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: "w", TTL: time.Minute, Add: time.Minute}, true, 0},
	{"writer's mark cleared", quorum.Cmd{Kind: quorum.Get, Key: quorum.WriterKey("k")}, false, 0},
	{"reader among a writer", rw(quorum.AcquireShared, "shared:4", time.Minute), false, 0},
	{"writer's release", quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: "w"}, true, 1},
	{"reader after the writer", rw(quorum.AcquireShared, "shared:5", time.Minute), true, 0},
	{"a plain lock of a reader-shaped token", quorum.Cmd{Kind: quorum.Set, Key: "k2", Token: "shared:6", TTL: time.Minute}, true, 0},
	{"is released as a plain lock", quorum.Cmd{Kind: quorum.ReleaseShared, Key: "k2", Token: "shared:6"}, true, 1},
}

func runSharedLife(t *testing.T, n quorum.Node) {
	t.Helper()
	for _, st := range sharedLife {
		rep := quorum.Call(context.Background(), n, st.cmd)
		// N is part of the reply of these kinds only.
		countsN := st.cmd.Kind == quorum.ReadShared || st.cmd.Kind == quorum.ReleaseShared
		if rep.Err != nil || rep.OK != st.ok || (countsN && rep.N != st.n) {
			t.Fatalf("%s: %+v; want OK %v N %d", st.name, rep, st.ok, st.n)
		}
	}
}

func TestSharedLifeRedis(t *testing.T) {
	srv := redistest.Start(t)
	runSharedLife(t, newTestRedis(t, srv.Addr()))
	ttl, err := srv.Client().PTTL(t.Context(), quorum.SharedKey("k")).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("the readers' set has no expiry: %v %v", ttl, err)
	}
}

func TestSharedLifeMemory(t *testing.T) {
	m := New("m")
	defer m.Close()
	runSharedLife(t, m)
}

// A reader expires on its own on a real server: the other stays, and the
// marker lives as long as it.
func TestSharedReaderExpiryRedis(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	for _, c := range []quorum.Cmd{rw(quorum.AcquireShared, "shared:short", 20*time.Millisecond), rw(quorum.AcquireShared, "shared:long", time.Minute)} {
		if rep := quorum.Call(t.Context(), r, c); !rep.OK || rep.Err != nil {
			t.Fatalf("%+v: %+v", c, rep)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for quorum.Call(t.Context(), r, quorum.Cmd{Kind: quorum.ReadShared, Key: "k"}).N != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the short reader never expired")
		}
		time.Sleep(5 * time.Millisecond) // the server's clock
	}
	if rep := quorum.Call(t.Context(), r, rw(quorum.ExtendShared, "shared:short", time.Minute)); rep.OK {
		t.Fatal("an expired reader was renewed")
	}
	if ttl := srv.Client().PTTL(t.Context(), "k").Val(); ttl < 50*time.Second {
		t.Fatalf("marker pttl %v, want the long reader's", ttl)
	}
}
