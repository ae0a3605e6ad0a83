package e2e

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// potteryExtend is pottery's Redlock extend script, byte for byte (the
// proxy recognises it by its SHA1).
const potteryExtend = `
                if redis.call('get', KEYS[1]) == ARGV[1] then
                    return redis.call('pexpire', KEYS[1], ARGV[2])
                else
                    return 0
                end
            `

// TestLibraryExtendKeepsOwnerHolds: two holders of one owner's lock, on
// two proxies; one of them extends it with a library's extend (or SET …
// IFEQ) far beyond the lock's first ttl. Once that first ttl has passed,
// the other holder's UNLOCK drops its own hold only: the lock stays with
// the extended holder and another owner does not get it. The extend must
// carry the hold count along with the lock, as RENEW does, or the count
// expires first and one UNLOCK frees a lock that another hold keeps.
func TestLibraryExtendKeepsOwnerHolds(t *testing.T) {
	servers := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, servers, redlocktest.Options{})
	second := redlocktest.StartOver(t, servers, redlocktest.Options{})
	a, b := first.Client(t, 2), second.Client(t, 2)
	extends := map[string]func(key, tok string) error{
		"pottery extend": func(key, tok string) error {
			n, err := b.Eval(ctxT(t), potteryExtend, []string{key}, tok, 20000).Int()
			if err == nil && n != 1 {
				err = errors.New("extend answered 0")
			}
			return err
		},
		"SET IFEQ": func(key, tok string) error {
			return b.Do(ctxT(t), "SET", key, tok, "XX", "PX", 20000, "IFEQ", tok).Err()
		},
	}
	for name, extend := range extends {
		t.Run(name, func(t *testing.T) {
			key := "ext:" + name
			tok, _ := lock(t, a, key, 300, "OWNER", "w")
			if again, _ := lock(t, b, key, 300, "OWNER", "w"); again != tok {
				t.Fatalf("second hold's token %q, want %q", again, tok)
			}
			if err := extend(key, tok); err != nil {
				t.Fatalf("extend: %v", err)
			}
			pollFor(t, "the lock's first ttl to pass", func() bool { return holdsOutlived(t, servers, key, 1000) })
			if n, err := a.Do(ctxT(t), "UNLOCK", key, tok).Int(); err != nil || n != 1 {
				t.Fatalf("first holder's UNLOCK = %d, %v", n, err)
			}
			if res, err := a.Do(ctxT(t), "LOCK", key, 5000, "OWNER", "other").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("another owner's LOCK while the extended hold stands = %v, %v; want null", res, err)
			}
			if got, err := b.Get(ctxT(t), key).Result(); err != nil || got != tok {
				t.Fatalf("GET = %q, %v; want the extended holder's token", got, err)
			}
		})
	}
}

// holdsOutlived reports whether, on every backend, the hold count of key
// has either expired or has more than ms to run: the lock's first ttl is
// over, or the count was extended along with the lock.
func holdsOutlived(t *testing.T, servers []*redistest.Server, key string, ms int64) bool {
	t.Helper()
	for _, s := range servers {
		d, err := s.Client().PTTL(ctxT(t), quorum.HoldsKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d >= 0 && d.Milliseconds() <= ms {
			return false
		}
	}
	return true
}

// TestOwnerRenewNeverShortensAnotherHold: two holders of one owner's lock,
// on two proxies, the first told ~10 s. The second's RENEW with a short
// ttl (a KEEPALIVE hold of a short ttl renews so too) must not cut the
// first holder's validity short: the lock keeps its ttl on the backends,
// and another owner does not get it.
func TestOwnerRenewNeverShortensAnotherHold(t *testing.T) {
	servers := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, servers, redlocktest.Options{})
	second := redlocktest.StartOver(t, servers, redlocktest.Options{})
	a, b := first.Client(t, 2), second.Client(t, 2)
	tok, _ := lock(t, a, "short", 10000, "OWNER", "w")
	if again, _ := lock(t, b, "short", 10000, "OWNER", "w"); again != tok {
		t.Fatalf("second hold's token %q, want %q", again, tok)
	}
	v, err := b.Do(ctxT(t), "RENEW", "short", tok, 300).Int()
	if err != nil || v <= 0 || v > 300 {
		t.Fatalf("RENEW with 300 ms = %d, %v; want a validity within 300 ms", v, err)
	}
	for i, s := range servers {
		for _, k := range []string{"short", quorum.HoldsKey("short")} {
			if d, err := s.Client().PTTL(ctxT(t), k).Result(); err != nil || d.Milliseconds() < 5000 {
				t.Fatalf("backend %d: PTTL %s after the short RENEW = %v, %v; want the first hold's ~10 s", i, k, d, err)
			}
		}
	}
	if res, err := a.Do(ctxT(t), "LOCK", "short", 5000, "OWNER", "other").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("another owner's LOCK = %v, %v; want null", res, err)
	}
}
