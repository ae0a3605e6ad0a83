package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// A KEEPALIVE lock lives as long as its connection, and no longer than its
// ttl past the proxy process: these tests run the real binary as a child
// process, so that it can be killed.

// holders counts the servers that store token at key.
func kaHolders(t *testing.T, servers []*redistest.Server, key, token string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := s.Client().Get(ctx, key).Result()
		cancel()
		if err == nil && v == token {
			n++
		}
	}
	return n
}

func kaLock(t *testing.T, addr, key string, ttlMs string) (*redis.Client, string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	res, err := c.Do(context.Background(), "LOCK", key, ttlMs, "KEEPALIVE").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK KEEPALIVE = %v, %v", res, err)
	}
	return c, res[0].(string)
}

func kaWaitUntil(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func TestKeepaliveAcrossProxyProcessDeath(t *testing.T) {
	servers := redistest.StartN(t, 3)
	bin := redlocktest.Build(t, "./cmd/redlockd")

	t.Run("SIGKILL frees it after its ttl", func(t *testing.T) {
		// A renewal that fails to reach a majority loses the lock, so the
		// ttl and node timeout leave room for a loaded machine's stalls.
		p := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "500ms")
		_, tok := kaLock(t, p.Addr, "killed", "1000")
		end := time.Now().Add(2 * time.Second) // two ttls
		for time.Now().Before(end) {
			if n := kaHolders(t, servers, "killed", tok); n < 2 {
				t.Fatalf("kept lock held on %d backends", n)
			}
			time.Sleep(50 * time.Millisecond) // pacing the checks
		}
		p.Signal(t, syscall.SIGKILL)
		if n := kaHolders(t, servers, "killed", tok); n < 2 {
			t.Fatalf("lock gone at once after SIGKILL (%d holders): nothing could have released it", n)
		}
		kaWaitUntil(t, 3*time.Second, "lock expired after the proxy died", func() bool {
			return kaHolders(t, servers, "killed", tok) == 0
		})
	})

	t.Run("graceful shutdown releases it at once", func(t *testing.T) {
		p := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
		_, tok := kaLock(t, p.Addr, "stopped", "10000")
		p.Signal(t, syscall.SIGTERM)
		if n := kaHolders(t, servers, "stopped", tok); n != 0 {
			t.Fatalf("lock still on %d backends after a graceful shutdown (ttl 10s)", n)
		}
	})
}
