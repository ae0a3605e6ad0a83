package e2e

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestHorizonInDBZero: with backend URLs that name db 2, a lock lives in
// db 2 of each server and the lock horizon that covers it in db 0, as
// docs/safety.md says, so that every proxy in front of a server finds the
// same horizon.
func TestHorizonInDBZero(t *testing.T) {
	servers := redistest.StartN(t, 3)
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "redis://" + s.Addr() + "/2"
	}
	in := redlocktest.StartOverAddrs(t, urls, redlocktest.Options{})
	tok, _ := lock(t, in.Client(t, 2), "dbk", 10000)
	if vals := redlocktest.ValuesIn(t, servers, 2, "dbk"); redlocktest.Count(vals, tok) != 3 {
		t.Fatalf("db 2 of the servers holds %q, want the token on all three", vals)
	}
	ctx := ctxT(t)
	for i, s := range servers {
		if pttl := s.Client().PTTL(ctx, quorum.HorizonKey).Val(); pttl < 9*time.Second {
			t.Errorf("server %d: db 0's %s pttl = %v, want one covering the 10s lock", i, quorum.HorizonKey, pttl)
		}
		db2 := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: 2, DisableIdentity: true})
		if n := db2.Exists(ctx, quorum.HorizonKey).Val(); n != 0 {
			t.Errorf("server %d: db 2 has a %s too", i, quorum.HorizonKey)
		}
		db2.Close()
	}
}
