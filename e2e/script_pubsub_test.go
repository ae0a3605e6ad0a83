package e2e

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// Redisson's unlock (a hash lock whose release publishes on the lock's
// channel), run as a replicated script through redlockd. It runs on every
// backend, so each publishes: a subscriber, in RESP2 and RESP3 and on a
// second proxy, gets the message once per release, and twice for two.
func TestReplicatedScriptPublishOnce(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	other := redlocktest.StartOver(t, in.Backends, redlocktest.Options{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			key := fmt.Sprintf("lock%d", proto)
			ch := "redisson_lock__channel:{" + key + "}"
			subs := []func() string{
				nextMessage(t, subscribe(t, in.Addr, proto, false, ch)),
				nextMessage(t, subscribe(t, other.Addr, proto, false, ch)),
			}
			lockUnlockTwice(t, in.Client(t, proto), key, ch)
			want := marks(t, in.Backends, ch)
			for i, next := range subs {
				mine := maps.Clone(want)
				if got := untilMarks(t, mine, next); !slices.Equal(got, []string{"0", "0"}) {
					t.Errorf("subscriber on proxy %d received %q, want the unlock message twice (once per release)", i, got)
				}
			}
		})
	}
}

// The same in embedded mode: each of the three in-memory nodes runs the
// script and publishes, and the subscriber gets one copy per release. A
// message published through redlockd, delivered once, ends the wait.
func TestReplicatedScriptPublishOnceEmbedded(t *testing.T) {
	in := redlocktest.StartMemory(t, redlocktest.Options{})
	const ch = "redisson_lock__channel:{m}"
	next := nextMessage(t, subscribe(t, in.Addr, 2, false, ch))
	c := in.Client(t, 2)
	lockUnlockTwice(t, c, "m", ch)
	var got []string
	for _, end := range []string{"end-1", "end-2"} {
		publish(t, c, ch, end)
		for p := next(); p != end; p = next() {
			got = append(got, p)
		}
	}
	if !slices.Equal(got, []string{"0", "0"}) {
		t.Errorf("received %q before the end markers, want the unlock message twice", got)
	}
}

// lockUnlockTwice takes and releases a Redisson-style hash lock on key
// twice, by replicated scripts; each release publishes "0" on ch.
func lockUnlockTwice(t *testing.T, c *redis.Client, key, ch string) {
	t.Helper()
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
	for range 2 {
		if err := c.Eval(ctxT(t), acquire, []string{key}, 60000, "id:1").Err(); err != redis.Nil {
			t.Fatalf("acquire = %v, want nil (acquired)", err)
		}
		if n, err := c.Eval(ctxT(t), unlock, []string{key, ch}, "0", "id:1").Int(); err != nil || n != 1 {
			t.Fatalf("unlock = %d, %v", n, err)
		}
	}
}
