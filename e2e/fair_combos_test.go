package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestFairRedisCLI: redis-cli takes a fair lock through the proxy and
// prints its token and validity; a FAIR try-lock of the held key gets nil.
func TestFairRedisCLI(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	cli := func(args ...string) string {
		t.Helper()
		out, err := childproc.Output(childproc.CommandContext(ctxT(t), "redis-cli", append([]string{"-p", fmt.Sprint(in.Port)}, args...)...))
		if err != nil {
			t.Fatalf("redis-cli %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	lines := strings.Split(cli("LOCK", "fair:cli", "10000", "WAIT", "1000", "FAIR", "TOKEN", "cli"), "\n")
	if len(lines) != 2 || lines[0] != "cli" {
		t.Fatalf("redis-cli LOCK FAIR printed %q, want the token and validity", lines)
	}
	if got := cli("LOCK", "fair:cli", "10000", "FAIR"); got != "" {
		t.Errorf("redis-cli FAIR try-lock of a held key printed %q, want nil (empty)", got)
	}
	if got := cli("UNLOCK", "fair:cli", "cli"); got != "1" {
		t.Errorf("redis-cli UNLOCK printed %q", got)
	}
}

// TestFairCombinations: a fair lock over RESP3 in db 3 with FENCE and
// KEEPALIVE: the queue lives in that db on the backends, the holder's
// hang-up releases its kept lock to the queue's head on the other proxy,
// whose fence is greater, and RENEW and UNLOCK treat the fair lock as a
// plain one.
func TestFairCombinations(t *testing.T) {
	backends, px := twoProxies(t, redlocktest.Options{})
	const key, db = "fair:combo", 3
	client := func(in *redlocktest.Instance) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 3, DB: db, ReadTimeout: -1, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder, waiter := client(px[0]), client(px[1])
	first, err := holder.Do(ctxT(t), "LOCK", key, 300, "WAIT", 1000, "FAIR", "FENCE", "KEEPALIVE").Slice()
	if err != nil || len(first) != 3 {
		t.Fatalf("LOCK FAIR FENCE KEEPALIVE = %v, %v", first, err)
	}
	next := lockAsync(waiter, key, 10000, "WAIT", 20000, "FAIR", "FENCE", "TOKEN", "next")
	pollFor(t, "the waiter queued in db 3 on every backend", func() bool {
		for _, s := range backends {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db})
			n, _ := c.ZCard(ctxT(t), backend.FairQueueKey(key)).Result()
			c.Close()
			if n != 1 {
				return false
			}
		}
		return true
	})
	if n := queuedInDB0(t, backends, key); n != 0 {
		t.Fatalf("%d entries queued in db 0; the waiter's db is 3", n)
	}
	holder.Close() // ends the KEEPALIVE lock, released to the queue
	r := <-next
	if r.err != nil || len(r.res) != 3 || r.res[0] != "next" {
		t.Fatalf("waiter's LOCK = %v, %v", r.res, r.err)
	}
	if f0, f1 := first[2].(int64), r.res[2].(int64); f1 <= f0 {
		t.Errorf("fence %d after %d: want it greater", f1, f0)
	}
	if v, err := waiter.Do(ctxT(t), "RENEW", key, "next", 10000).Int64(); err != nil || v <= 0 {
		t.Errorf("RENEW of a fair lock = %v, %v", v, err)
	}
	if n, err := waiter.Do(ctxT(t), "UNLOCK", key, "next").Int(); err != nil || n != 1 {
		t.Errorf("UNLOCK of a fair lock = %v, %v", n, err)
	}
}

func queuedInDB0(t *testing.T, backends []*redistest.Server, key string) int {
	t.Helper()
	n := 0
	for _, q := range fairQueued(t, backends, key) {
		n += len(q)
	}
	return n
}
