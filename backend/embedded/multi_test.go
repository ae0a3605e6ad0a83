package embedded

import (
	"github.com/redlockd/redlockd/testkit/nodetest"
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMultiKeyRedis(t *testing.T) {
	srv := redistest.Start(t)
	testMultiKey(t, newTestRedis(t, srv.Addr()))
}

func TestMultiKeyMemory(t *testing.T) { testMultiKey(t, New("m")) }

func TestAddTTLRedis(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	testAddTTL(t, r)
	// A key without expiry, written behind the proxy's back, is refused.
	if err := srv.Client().Set(t.Context(), "forever", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := nodetest.AddTTL(t.Context(), r, "forever", "a", time.Second, time.Minute); ok || err != nil {
		t.Fatalf("add to a key without expiry = %v, %v; want false, nil", ok, err)
	}
}

func TestAddTTLMemory(t *testing.T) { testAddTTL(t, New("m")) }

func testMultiKey(t *testing.T, n quorum.Node) {
	t.Helper()
	ctx := t.Context()
	ab := []string{"a", "b"}
	must := func(what string, got, want bool, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	ok, err := nodetest.SetNXAll(ctx, n, ab, "t1", time.Minute)
	must("SetNXAll a,b", ok, true, err)
	ok, err = nodetest.SetNXAll(ctx, n, []string{"b", "c"}, "t2", time.Minute)
	must("SetNXAll b,c over held b", ok, false, err)
	if _, _, held, err := nodetest.Get(ctx, n, "c"); err != nil || held {
		t.Fatalf("a refused SetNXAll stored c: not all-or-nothing (read: %v)", err)
	}
	ok, err = nodetest.SetNX(ctx, n, "c", "t2", time.Minute)
	must("SetNX c", ok, true, err)
	ok, err = nodetest.ExtendAll(ctx, n, []string{"a", "c"}, "t1", 2*time.Minute)
	must("ExtendAll with a foreign key", ok, false, err)
	if _, pttl, _, err := nodetest.Get(ctx, n, "a"); err != nil || pttl > time.Minute {
		t.Fatalf("a refused ExtendAll extended a to %v (read: %v)", pttl, err)
	}
	ok, err = nodetest.ExtendAll(ctx, n, ab, "t1", 2*time.Minute)
	must("ExtendAll a,b", ok, true, err)
	if _, pttl, _, err := nodetest.Get(ctx, n, "b"); err != nil || pttl <= time.Minute || pttl > 2*time.Minute {
		t.Fatalf("b's pttl after ExtendAll = %v (read: %v)", pttl, err)
	}
	got, err := nodetest.ReleaseEach(ctx, n, []string{"a", "c", "b", "absent"}, "t1")
	if err != nil || !slices.Equal(got, []bool{true, false, true, false}) {
		t.Fatalf("ReleaseEach = %v, %v", got, err)
	}
	if tok, _, held, _ := nodetest.Get(ctx, n, "c"); !held || tok != "t2" {
		t.Fatalf("ReleaseEach touched another token's key: %q %v", tok, held)
	}
}

func testAddTTL(t *testing.T, n quorum.Node) {
	t.Helper()
	ctx := t.Context()
	if ok, err := nodetest.SetNX(ctx, n, "k", "a", 10*time.Second); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	ttl, ok, err := nodetest.AddTTL(ctx, n, "k", "a", 5*time.Second, time.Minute)
	if !ok || err != nil || ttl <= 10*time.Second || ttl > 15*time.Second {
		t.Fatalf("add 5s to 10s = %v, %v, %v; want (10s, 15s]", ttl, ok, err)
	}
	if _, pttl, _, err := nodetest.Get(ctx, n, "k"); err != nil || pttl <= 10*time.Second || pttl > 15*time.Second {
		t.Fatalf("pttl after add = %v (read: %v)", pttl, err)
	}
	if ttl, ok, err := nodetest.AddTTL(ctx, n, "k", "a", 50*time.Second, 20*time.Second); !ok || err != nil || ttl != 20*time.Second {
		t.Fatalf("add capped at 20s = %v, %v, %v", ttl, ok, err)
	}
	for _, tc := range []struct{ key, token string }{{"k", "other"}, {"absent", "a"}} {
		if _, ok, err := nodetest.AddTTL(ctx, n, tc.key, tc.token, time.Second, time.Minute); ok || err != nil {
			t.Fatalf("add on %s/%s = %v, %v; want false, nil", tc.key, tc.token, ok, err)
		}
	}
}
