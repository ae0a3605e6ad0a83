package compat

import (
	"errors"
	"testing"
	"time"

	redisv8 "github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	goredisv8 "github.com/go-redsync/redsync/v4/redis/goredis/v8"
	goredisv9 "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"
	redisv9 "github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// redsyncPools are go-redsync's pools over the client libraries it
// adapts, each a pool of one client of addr, closed by the test's
// cleanup.
var redsyncPools = []struct {
	name string
	pool func(t *testing.T, addr string) redsyncredis.Pool
}{
	{"goredis-v9", func(t *testing.T, addr string) redsyncredis.Pool {
		c := redisv9.NewClient(&redisv9.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		return goredisv9.NewPool(c)
	}},
	{"goredis-v8", func(t *testing.T, addr string) redsyncredis.Pool {
		c := redisv8.NewClient(&redisv8.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		return goredisv8.NewPool(c)
	}},
	{"redigo", func(t *testing.T, addr string) redsyncredis.Pool {
		p := &redis.Pool{MaxIdle: 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
		t.Cleanup(func() { p.Close() })
		return redsyncredigo.NewPool(p)
	}},
}

// TestRedsyncPools runs go-redsync unchanged over each of its pools, with
// one pool per proxy, first against a plain redis-server, then through two
// redlockd proxies over the same three backends: Lock, a mutex behind the
// other proxy refused while it is held, Extend, Unlock, the other mutex
// granted after, and a stale Unlock that leaves the new holder's lock.
func TestRedsyncPools(t *testing.T) {
	for _, p := range redsyncPools {
		t.Run(p.name, func(t *testing.T) {
			eachTarget(t, func(t *testing.T, tg target) {
				ctx := testCtx(t)
				majority := len(tg.backends)/2 + 1
				name := "redsync:" + p.name
				held := func(want string) {
					t.Helper()
					vals := redlocktest.ValuesIn(t, tg.backends, 0, name)
					if n := redlocktest.Count(vals, want); n < majority {
						t.Fatalf("backends hold %q, want %q on a majority", vals, want)
					}
				}
				opts := []redsync.Option{redsync.WithExpiry(8 * time.Second), redsync.WithTries(3), redsync.WithRetryDelay(10 * time.Millisecond)}
				m := redsync.New(p.pool(t, tg.addr)).NewMutex(name, opts...)
				other := redsync.New(p.pool(t, tg.other)).NewMutex(name, opts...)

				if err := m.LockContext(ctx); err != nil {
					t.Fatalf("Lock: %v", err)
				}
				held(m.Value())
				var taken *redsync.ErrTaken
				if err := other.LockContext(ctx); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
					t.Fatalf("Lock through the other proxy: %v, want ErrFailed or ErrTaken", err)
				}
				before := m.Until()
				if ok, err := m.ExtendContext(ctx); err != nil || !ok {
					t.Fatalf("Extend = %v, %v", ok, err)
				}
				if !m.Until().After(before) {
					t.Fatalf("Extend did not move Until: %v -> %v", before, m.Until())
				}
				if ok, err := other.ExtendContext(ctx); ok || err == nil {
					t.Fatalf("the other mutex's Extend = %v, %v; want refused", ok, err)
				}
				if ok, err := m.UnlockContext(ctx); err != nil || !ok {
					t.Fatalf("Unlock = %v, %v", ok, err)
				}
				if vals := redlocktest.ValuesIn(t, tg.backends, 0, name); redlocktest.Count(vals, "<nil>") != len(vals) {
					t.Fatalf("after Unlock the backends hold %q", vals)
				}
				if err := other.LockContext(ctx); err != nil {
					t.Fatalf("Lock through the other proxy after Unlock: %v", err)
				}
				if ok, _ := m.UnlockContext(ctx); ok {
					t.Fatalf("stale Unlock reported success")
				}
				held(other.Value())
				if ok, err := other.UnlockContext(ctx); err != nil || !ok {
					t.Fatalf("Unlock through the other proxy = %v, %v", ok, err)
				}
			})
		})
	}
}
