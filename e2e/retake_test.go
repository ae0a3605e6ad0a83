package e2e

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/redlocktest"
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
