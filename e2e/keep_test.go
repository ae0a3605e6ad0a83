package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// holdOn counts the backends that store value at key.
func holdOn(t *testing.T, backends []*redistest.Server, key, value string) int {
	t.Helper()
	n := 0
	for _, s := range backends {
		if v, err := s.Client().Get(ctxT(t), key).Result(); err == nil && v == value {
			n++
		}
	}
	return n
}

// grantedByFirstThree takes key through c on five backends so that exactly
// b0, b1 and b2 grant it: b3 and b4 briefly hold something else.
func grantedByFirstThree(t *testing.T, in *redlocktest.Instance, c *redis.Client, key string) string {
	t.Helper()
	for _, s := range in.Backends[3:] {
		if err := s.Client().Set(ctxT(t), key, "someone-else", 300*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tok, _ := lock(t, c, key, 10000)
	for i, s := range in.Backends[:3] {
		if v := s.Client().Get(ctxT(t), key).Val(); v != tok {
			t.Fatalf("backend %d holds %q, want A's token", i, v)
		}
	}
	pollFor(t, "b3 and b4 free again", func() bool {
		return in.Backends[3].Client().Exists(ctxT(t), key).Val() == 0 &&
			in.Backends[4].Client().Exists(ctxT(t), key).Val() == 0
	})
	return tok
}

// TestFailedExtendKeepsLock: A's lock stands on b0, b1, b2 of five; b0 is
// stopped, so an extend reaches only b1 and b2 and fails. Each extend form
// must answer "not extended" and leave the lock as it was: A's token stays
// on b1 and b2, and another client's LOCK is refused while A's validity
// runs.
func TestFailedExtendKeepsLock(t *testing.T) {
	forms := map[string]func(c *redis.Client, key, tok string) error{
		// RENEW answers null; SET … XX … IFEQ answers null when it did not set.
		"RENEW": func(c *redis.Client, key, tok string) error {
			return c.Do(ctxT(t), "RENEW", key, tok, 10000).Err()
		},
		"SET XX IFEQ": func(c *redis.Client, key, tok string) error {
			return c.Do(ctxT(t), "SET", key, tok, "XX", "PX", 10000, "IFEQ", tok).Err()
		},
	}
	for name, extend := range forms {
		t.Run(name, func(t *testing.T) {
			in := redlocktest.Start(t, redlocktest.Options{Backends: 5, NodeTimeout: 50 * time.Millisecond})
			a, b := in.Client(t, 2), in.Client(t, 2)
			tok := grantedByFirstThree(t, in, a, "k")
			in.Backends[0].Stop()
			t.Cleanup(in.Backends[0].Cont)
			err := extend(a, "k", tok)
			if !errors.Is(err, redis.Nil) {
				t.Fatalf("%s reaching b1, b2 only = %v, want null", name, err)
			}
			if n := holdOn(t, in.Backends[1:], "k", tok); n != 2 {
				t.Fatalf("after the failed %s A's token is on %d of b1, b2 (want both): it was deleted", name, n)
			}
			res, err := b.Do(ctxT(t), "LOCK", "k", 10000).Result()
			if !errors.Is(err, redis.Nil) {
				t.Fatalf("another client's LOCK while A's validity runs = %v, %v; want null", res, err)
			}
			in.Backends[0].Cont()
			pollFor(t, "A's RENEW succeeds once b0 answers again", func() bool {
				return a.Do(ctxT(t), "RENEW", "k", tok, 10000).Err() == nil
			})
			if n, err := a.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
				t.Fatalf("UNLOCK = %d, %v; want 1", n, err)
			}
		})
	}
}
