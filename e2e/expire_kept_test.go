package e2e

import (
	"testing"
	"time"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestExpireEndsKeptLock: PEXPIRE with a positive ttl, or SET with an
// expiry, on a kept lock hands the key's life to the client, as in Redis a
// key without expiry becomes one that expires: the proxy stops renewing
// it, PTTL reports the ttl the client set, the key expires then on every
// backend, and no loss is counted.
func TestExpireEndsKeptLock(t *testing.T) {
	take := map[string][]any{
		"session":   {"SET", "k", "v", "NX"},
		"KEEPALIVE": {"LOCK", "k", 600, "TOKEN", "v", "KEEPALIVE"},
	}
	end := map[string][]any{
		"PEXPIRE": {"PEXPIRE", "k", 1500},
		"SET PX":  {"SET", "k", "v", "PX", 1500},
	}
	for name, cmd := range take {
		for ename, ecmd := range end {
			t.Run(name+" "+ename, func(t *testing.T) { expireEndsKeptLock(t, cmd, ecmd) })
		}
	}
}

func expireEndsKeptLock(t *testing.T, cmd, endCmd []any) {
	in := redlocktest.Start(t, redlocktest.Options{
		Commands: commands.Options{MaxTTL: 2 * time.Second, SessionTTL: 600 * time.Millisecond},
	})
	a := soleClient(t, in)
	if err := a.Do(ctxT(t), cmd...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Do(ctxT(t), endCmd...).Err(); err != nil {
		t.Fatalf("%v: %v", endCmd, err)
	}
	if n := in.Handler.KeepaliveStats().Held; n != 0 {
		t.Fatalf("after %v %d lock(s) still renewed", endCmd, n)
	}
	if d, err := a.PTTL(ctxT(t), "k").Result(); d <= 0 || d > 1500*time.Millisecond || err != nil {
		t.Fatalf("PTTL after %v = %v, %v", endCmd, d, err)
	}
	pollFor(t, "the key expired on every backend", func() bool {
		for _, s := range in.Backends {
			if s.Client().Exists(ctxT(t), "k").Val() != 0 {
				return false
			}
		}
		return true
	})
	if n := in.Handler.KeepaliveStats().Lost; n != 0 {
		t.Fatalf("%d kept lock(s) counted lost after an expiry the client set", n)
	}
}
