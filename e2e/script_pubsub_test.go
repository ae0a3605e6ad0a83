package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redlockd/redlockd/internal/redlocktest"
)

// Redisson's unlock (a hash lock whose release publishes on the lock's
// channel), run as a replicated script through redlockd. It runs on every
// backend, so each publishes: a subscriber, in RESP2 and RESP3 and on a
// second proxy, gets the message once per release, and twice for two.
func TestReplicatedScriptPublishOnce(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	other := redlocktest.StartOver(t, in.Backends, redlocktest.Options{})
	const acquire = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	const unlock = `if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			key := fmt.Sprintf("lock%d", proto)
			ch := "redisson_lock__channel:{" + key + "}"
			subs := []func() string{
				nextMessage(t, subscribe(t, in.Addr, proto, false, ch)),
				nextMessage(t, subscribe(t, other.Addr, proto, false, ch)),
			}
			c := in.Client(t, proto)
			for range 2 {
				if err := c.Eval(ctxT(t), acquire, []string{key}, 60000, "id:1").Err(); err == nil || err.Error() != "redis: nil" {
					t.Fatalf("acquire = %v, want nil (acquired)", err)
				}
				if n, err := c.Eval(ctxT(t), unlock, []string{key, ch}, "0", "id:1").Int(); err != nil || n != 1 {
					t.Fatalf("unlock = %d, %v", n, err)
				}
			}
			want := marks(t, in.Backends, ch)
			for i, next := range subs {
				mine := map[string]bool{}
				for m := range want {
					mine[m] = true
				}
				if got := untilMarks(t, mine, next); !slices.Equal(got, []string{"0", "0"}) {
					t.Errorf("subscriber on proxy %d received %q, want the unlock message twice (once per release)", i, got)
				}
			}
		})
	}
}
