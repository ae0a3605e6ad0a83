package compat

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisTxPipelined runs go-redis's TxPipelined (MULTI … EXEC in one
// write) in RESP2 and RESP3, against one redis-server and across two
// proxies: a transaction that only reads, and one that takes, reads and
// releases locks, with each element of EXEC's reply as Redis gives it.
func TestGoRedisTxPipelined(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		for _, proto := range []int{2, 3} {
			txScenario(t, newGoRedis(t, tg.addr, proto), newGoRedis(t, tg.other, proto))
		}
	})
}

func newGoRedis(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
	t.Cleanup(func() { c.Close() })
	return c
}

func txScenario(t *testing.T, a, b *redis.Client) {
	ctx := testCtx(t)
	const k1, k2 = "tx:orders", "tx:invoices"
	a.Del(ctx, k1, k2)
	var set1, set2, again *redis.StatusCmd
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := a.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set1 = p.SetArgs(ctx, k1, "tok-1", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		set2 = p.SetArgs(ctx, k2, "tok-2", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		again = p.SetArgs(ctx, k1, "tok-3", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		get = p.Get(ctx, k1)
		pttl = p.PTTL(ctx, k2)
		return nil
	})
	if err != nil && err != redis.Nil {
		t.Fatalf("TxPipelined (writes): %v", err)
	}
	if set1.Val() != "OK" || set2.Val() != "OK" || again.Err() != redis.Nil || get.Val() != "tok-1" {
		t.Fatalf("TxPipelined = %q %q %v %q", set1.Val(), set2.Val(), again.Err(), get.Val())
	}
	if d := pttl.Val(); d <= 0 || d > 10*time.Second {
		t.Fatalf("PTTL in the transaction = %v", d)
	}
	// The other side sees the locks, in a transaction that only reads.
	var g1, g2 *redis.StringCmd
	var n *redis.IntCmd
	if _, err := b.TxPipelined(ctx, func(p redis.Pipeliner) error {
		g1, g2 = p.Get(ctx, k1), p.Get(ctx, k2)
		n = p.Exists(ctx, k1, k2, "tx:none")
		return nil
	}); err != nil {
		t.Fatalf("TxPipelined (reads): %v", err)
	}
	if g1.Val() != "tok-1" || g2.Val() != "tok-2" || n.Val() != 2 {
		t.Fatalf("read transaction = %q %q %d", g1.Val(), g2.Val(), n.Val())
	}
	var del *redis.IntCmd
	if _, err := b.TxPipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, k1, k2)
		return nil
	}); err != nil || del.Val() != 2 {
		t.Fatalf("TxPipelined DEL = %d, %v", del.Val(), err)
	}
	if v, err := a.Exists(ctx, k1, k2).Result(); err != nil || v != 0 {
		t.Fatalf("after the release: EXISTS = %d, %v", v, err)
	}
}
