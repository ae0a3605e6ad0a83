package compat

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// countingClient is a go-redis client that counts the scripts it is asked
// to run, so that a test can wait for a retrying Obtain's attempts
// instead of sleeping. redislock sends every script by EVALSHA first.
type countingClient struct {
	*redis.Client
	evals atomic.Int64
}

func (c *countingClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.evals.Add(1)
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

func newCountingClient(t *testing.T, addr string) *countingClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return &countingClient{Client: c}
}

// waitEvals waits until c has sent at least n scripts.
func waitEvals(t *testing.T, ctx context.Context, c *countingClient, n int64) {
	t.Helper()
	for c.evals.Load() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("only %d scripts sent, waiting for %d", c.evals.Load(), n)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestBSMRedislock runs bsm/redislock unchanged, first against a plain
// redis-server (proving the scenario's checks), then through two redlockd
// proxies over the same three backends: Obtain, contention from the
// other proxy with and without retries, TTL, Refresh, re-obtaining with
// the lock's own token, Release, LinearBackoff and ExponentialBackoff
// waiters that get the lock once its holder releases it, and a lock that
// expires by itself.
func TestBSMRedislock(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		ctx := testCtx(t)
		ca, cb := newCountingClient(t, tg.addr), newCountingClient(t, tg.other)
		a, b := redislock.New(ca), redislock.New(cb)
		majority := len(tg.backends)/2 + 1
		const key = "bsm:orders"
		held := func(want string) {
			t.Helper()
			vals := redlocktest.ValuesIn(t, tg.backends, 0, key)
			if n := redlocktest.Count(vals, want); n < majority {
				t.Fatalf("backends hold %q, want %q on a majority", vals, want)
			}
		}

		lock, err := a.Obtain(ctx, key, 5*time.Second, &redislock.Options{Metadata: ":meta"})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if lock.Metadata() != ":meta" || lock.Token() == "" {
			t.Fatalf("lock token %q metadata %q", lock.Token(), lock.Metadata())
		}
		held(lock.Token() + ":meta")

		// Contention through the other proxy: refused at once, and after
		// three retries.
		if _, err := b.Obtain(ctx, key, 5*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second Obtain: %v, want ErrNotObtained", err)
		}
		before := cb.evals.Load()
		retry := redislock.LimitRetry(redislock.LinearBackoff(5*time.Millisecond), 3)
		if _, err := b.Obtain(ctx, key, 5*time.Second, &redislock.Options{RetryStrategy: retry}); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second Obtain with retries: %v, want ErrNotObtained", err)
		}
		if n := cb.evals.Load() - before; n != 4 {
			t.Fatalf("Obtain with LimitRetry 3 sent %d scripts, want 4", n)
		}

		ttl, err := lock.TTL(ctx)
		if err != nil || ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("TTL = %v, %v; want within (0, 5s]", ttl, err)
		}
		if err := lock.Refresh(ctx, 20*time.Second, nil); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if ttl, err := lock.TTL(ctx); err != nil || ttl <= 5*time.Second {
			t.Fatalf("TTL after Refresh to 20s = %v, %v", ttl, err)
		}
		// The same token through the other proxy re-obtains the lock (its
		// script compares the token with GETRANGE).
		again, err := b.Obtain(ctx, key, 10*time.Second, &redislock.Options{Token: lock.Token(), Metadata: ":meta"})
		if err != nil {
			t.Fatalf("Obtain with the holder's own token: %v", err)
		}
		if ttl, err := again.TTL(ctx); err != nil || ttl <= 0 || ttl > 10*time.Second {
			t.Fatalf("TTL after re-obtaining for 10s = %v, %v", ttl, err)
		}

		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		// Through redlockd TTL, Refresh and Release ran as a quorum read,
		// RENEW and UNLOCK: no backend was asked to load their scripts.
		// Obtain ran as a replicated script: every backend has it.
		if tg.name == redlockdTarget {
			for _, bk := range tg.backends {
				if obtain, err := bk.Client().ScriptExists(ctx, bsmObtainSHA).Result(); err != nil || !obtain[0] {
					t.Errorf("backend %s: obtain's script loaded = %v, %v; want it replicated there", bk.Addr(), obtain, err)
				}
				loaded, err := bk.Client().ScriptExists(ctx, bsmNativeSHAs...).Result()
				if err != nil {
					t.Fatal(err)
				}
				for i, yes := range loaded {
					if yes {
						t.Errorf("backend %s has bsm/redislock's script %s: it ran as a replicated script", bk.Addr(), bsmNativeSHAs[i])
					}
				}
			}
		}
		if vals := redlocktest.ValuesIn(t, tg.backends, 0, key); redlocktest.Count(vals, "<nil>") != len(vals) {
			t.Fatalf("after Release the backends hold %q", vals)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("second Release: %v, want ErrLockNotHeld", err)
		}
		if err := lock.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Refresh after Release: %v, want ErrNotObtained", err)
		}
		if ttl, err := lock.TTL(ctx); err != nil || ttl != 0 {
			t.Fatalf("TTL after Release = %v, %v; want 0", ttl, err)
		}

		// Waiters with each retry strategy get the lock once its holder,
		// behind the other proxy, releases it.
		for _, st := range []struct {
			name  string
			retry redislock.RetryStrategy
		}{
			{"linear", redislock.LinearBackoff(10 * time.Millisecond)},
			{"exponential", redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)},
		} {
			holder, err := a.Obtain(ctx, key, 20*time.Second, nil)
			if err != nil {
				t.Fatalf("%s: holder's Obtain: %v", st.name, err)
			}
			first := cb.evals.Load()
			got := make(chan error, 1)
			var waiter *redislock.Lock
			go func() {
				var err error
				waiter, err = b.Obtain(ctx, key, 5*time.Second, &redislock.Options{RetryStrategy: st.retry})
				got <- err
			}()
			waitEvals(t, ctx, cb, first+3) // refused twice, at least, before the release
			if err := holder.Release(ctx); err != nil {
				t.Fatalf("%s: holder's Release: %v", st.name, err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: waiter's Obtain: %v", st.name, err)
			}
			held(waiter.Token())
			if err := waiter.Release(ctx); err != nil {
				t.Fatalf("%s: waiter's Release: %v", st.name, err)
			}
		}

		// A lock that nobody refreshes expires, and then the other proxy's
		// client gets it.
		short, err := a.Obtain(ctx, key, 300*time.Millisecond, nil)
		if err != nil {
			t.Fatalf("short Obtain: %v", err)
		}
		next, err := b.Obtain(ctx, key, 5*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(20 * time.Millisecond)})
		if err != nil {
			t.Fatalf("Obtain after the short lock's expiry: %v", err)
		}
		if ttl, err := short.TTL(ctx); err != nil || ttl != 0 {
			t.Fatalf("expired lock's TTL = %v, %v; want 0", ttl, err)
		}
		if err := short.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("expired lock's Refresh: %v, want ErrNotObtained", err)
		}
		held(next.Token())
		if err := next.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// bsmObtainSHA names bsm/redislock v0.9.4's obtain script.
const bsmObtainSHA = "80a1b5f2cfccec3b7119ba7721d2127682b691a7"

// bsmNativeSHAs name bsm/redislock's refresh, release and ttl scripts.
var bsmNativeSHAs = []string{
	"a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf",
	"cf0e94b2e9ffc7e04395cf88f7583fc309985910",
	"6484da7d58920897fdc22b7f9afd1a3d47524ea8",
}
