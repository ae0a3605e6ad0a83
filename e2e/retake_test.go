package e2e

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestLostLockTakenAgain: a kept lock with a token the client chose (a
// session lock's value, LOCK … TOKEN) is lost, then the same key=token is
// acquired again. The new lock is held: GET answers its token, UNLOCK
// answers 1 and ends its renewal, and no loss is counted for it.
func TestLostLockTakenAgain(t *testing.T) {
	take := map[string][]any{
		"session":   {"SET", "k", "v", "NX"},
		"KEEPALIVE": {"LOCK", "k", 600, "TOKEN", "v", "KEEPALIVE"},
		"plain":     {"SET", "k", "v", "NX", "PX", 1500},
	}
	for name, again := range take {
		t.Run(name, func(t *testing.T) {
			in := redlocktest.Start(t, redlocktest.Options{
				Commands: commands.Options{MaxTTL: 2 * time.Second, SessionTTL: 600 * time.Millisecond},
			})
			a := soleClient(t, in)
			if err := a.Do(ctxT(t), "SET", "k", "v", "NX").Err(); err != nil {
				t.Fatal(err)
			}
			for _, s := range in.Backends {
				if err := s.Client().Del(ctxT(t), "k").Err(); err != nil {
					t.Fatal(err)
				}
			}
			pollFor(t, "the session lock counted lost", func() bool { return in.Handler.KeepaliveStats().Lost == 1 })
			retake(t, in, a, again)
		})
	}
}

// retake acquires k=v again with cmd on a and checks that the lock is
// held, and released by one UNLOCK.
func retake(t *testing.T, in *redlocktest.Instance, a *redis.Client, cmd []any) {
	t.Helper()
	if err := a.Do(ctxT(t), cmd...).Err(); err != nil {
		t.Fatalf("%v after the loss: %v", cmd, err)
	}
	if v, err := a.Get(ctxT(t), "k").Result(); v != "v" || err != nil {
		t.Fatalf("GET of the lock taken again = %q, %v; want its token", v, err)
	}
	if n, err := a.Do(ctxT(t), "UNLOCK", "k", "v").Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK of the lock taken again = %d, %v; want 1", n, err)
	}
	if n := in.Handler.KeepaliveStats().Held; n != 0 {
		t.Fatalf("after UNLOCK %d lock(s) still renewed", n)
	}
	if n := in.Handler.KeepaliveStats().Lost; n != 1 {
		t.Fatalf("%d kept locks counted lost, want only the first", n)
	}
	if n, err := in.Backends[0].Client().Exists(ctxT(t), "k").Result(); n != 0 || err != nil {
		t.Fatalf("after UNLOCK backend 0 EXISTS k = %d, %v; want 0", n, err)
	}
}

// TestLostKeptHoldLeavesOtherHolds: an owner lock has a KEEPALIVE hold
// (connection a) and a plain hold with a longer ttl (connection b) on the
// same proxy. Two backends stop for longer than a's validity: a's kept
// hold is lost. b's hold is not: once the backends are back, b's RENEW
// extends it and b's UNLOCK drops it, while a is still answered "not held".
// A new hold that a then takes is its own again: a's UNLOCK drops it.
func TestLostKeptHoldLeavesOtherHolds(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{NodeTimeout: 50 * time.Millisecond})
	a, b := soleClient(t, in), soleClient(t, in)
	tok, _ := lock(t, a, "k", 600, "OWNER", "w", "KEEPALIVE")
	if tb, _ := lock(t, b, "k", 10000, "OWNER", "w"); tb != tok {
		t.Fatalf("b's hold has token %q, a's %q", tb, tok)
	}
	in.Backends[1].Stop()
	in.Backends[2].Stop()
	pollFor(t, "a's kept hold counted lost", func() bool { return in.Handler.KeepaliveStats().Lost == 1 })
	in.Backends[1].Cont()
	in.Backends[2].Cont()
	wantNull(t, a, "a's RENEW of its lost hold", "RENEW", "k", tok, 10000)
	if v, err := b.Do(ctxT(t), "RENEW", "k", tok, 10000).Int(); v <= 0 || err != nil {
		t.Fatalf("b's RENEW of its own hold = %d, %v; want the new validity", v, err)
	}
	if v, err := b.Get(ctxT(t), "k").Result(); v != tok || err != nil {
		t.Fatalf("b's GET = %q, %v; want the token", v, err)
	}
	if ta, _ := lock(t, a, "k", 10000, "OWNER", "w"); ta != tok {
		t.Fatalf("a's new hold has token %q, want %q", ta, tok)
	}
	if n, err := a.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
		t.Fatalf("a's UNLOCK of its new hold = %d, %v; want 1", n, err)
	}
	if n, err := b.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
		t.Fatalf("b's UNLOCK of its own hold = %d, %v; want 1", n, err)
	}
}
