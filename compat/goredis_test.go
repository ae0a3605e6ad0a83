package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// compareAndDelete is the compare-and-delete release script of docs/commands.md (also the one in the
// Redis docs), sent by go-redis as EVALSHA with an EVAL fallback.
var compareAndDelete = redis.NewScript(
	`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

// TestGoRedis runs go-redis v9 with its default protocol (HELLO 3, RESP3)
// and with Protocol: 2, through redlockd's own commands and the plain
// SET NX PX / GET / PTTL / EVAL lock idiom.
func TestGoRedis(t *testing.T) {
	in := startRedlockd(t)
	for _, tc := range []struct {
		name     string
		protocol int
	}{{"resp3-default", 0}, {"resp2", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := in.Client(t, tc.protocol)
			t.Run("hello", func(t *testing.T) { goRedisHello(t, c, tc.protocol) })
			t.Run("lock-unlock", func(t *testing.T) { goRedisLock(t, in, c, "gr:"+tc.name+":lock") })
			t.Run("setnx-get-pttl-eval", func(t *testing.T) { goRedisSetNX(t, in, c, "gr:"+tc.name+":setnx") })
			t.Run("pipeline", func(t *testing.T) { goRedisPipeline(t, c, "gr:"+tc.name+":pipe") })
		})
	}
}

func goRedisHello(t *testing.T, c *redis.Client, protocol int) {
	ctx := testCtx(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if protocol == 2 {
		v, err := c.Do(ctx, "HELLO", "2").Result()
		if _, ok := v.([]any); err != nil || !ok {
			t.Fatalf("HELLO 2 = %#v, %v; want a flat array", v, err)
		}
		return
	}
	// On a RESP3 connection HELLO answers a map, which go-redis decodes
	// as a Go map: proof that the connection really speaks RESP3.
	v, err := c.Do(ctx, "HELLO", "3").Result()
	m, ok := v.(map[any]any)
	if err != nil || !ok {
		t.Fatalf("HELLO 3 = %#v, %v; want a map", v, err)
	}
	if m["proto"] != int64(3) {
		t.Fatalf("HELLO 3 proto = %#v, want 3", m["proto"])
	}
}

func goRedisLock(t *testing.T, in *instance, c *redis.Client, key string) {
	ctx := testCtx(t)
	v, err := c.Do(ctx, "LOCK", key, 10000).Slice()
	if err != nil || len(v) != 2 {
		t.Fatalf("LOCK = %#v, %v; want [token, validity]", v, err)
	}
	token, _ := v[0].(string)
	validity, _ := v[1].(int64)
	if token == "" || validity <= 0 || validity > 10000 {
		t.Fatalf("LOCK = %#v; want a token and 0 < validity <= 10000", v)
	}
	if n := redlocktest.Count(in.BackendValues(t, key), token); n < 2 {
		t.Fatalf("token on %d backends, want a majority", n)
	}
	// Contention is a null reply, never an error.
	if err := c.Do(ctx, "LOCK", key, 10000).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("second LOCK: err = %v, want redis.Nil", err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != token {
		t.Fatalf("GET = %q, %v; want %q", got, err, token)
	}
	if n, err := c.Do(ctx, "UNLOCK", key, "not-the-token").Int64(); err != nil || n != 0 {
		t.Fatalf("UNLOCK with a wrong token = %d, %v; want 0", n, err)
	}
	if n, err := c.Do(ctx, "UNLOCK", key, token).Int64(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %d, %v; want 1", n, err)
	}
	if n := redlocktest.Count(in.BackendValues(t, key), "<nil>"); n != 3 {
		t.Fatalf("after UNLOCK the key is absent on %d backends, want 3", n)
	}
	if err := c.Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after UNLOCK: err = %v, want redis.Nil", err)
	}
}

func goRedisSetNX(t *testing.T, in *instance, c *redis.Client, key string) {
	ctx := testCtx(t)
	// go-redis sends SET key value PX 1500 NX for a sub-second ttl part
	// and SET key value EX 10 NX for whole seconds: both option orders.
	for _, ttl := range []time.Duration{1500 * time.Millisecond, 10 * time.Second} {
		ok, err := c.SetNX(ctx, key, "tok-1", ttl).Result()
		if err != nil || !ok {
			t.Fatalf("SetNX(%v) = %v, %v; want true", ttl, ok, err)
		}
		if ok, err := c.SetNX(ctx, key, "tok-2", ttl).Result(); err != nil || ok {
			t.Fatalf("second SetNX(%v) = %v, %v; want false without error", ttl, ok, err)
		}
		if got, err := c.Get(ctx, key).Result(); err != nil || got != "tok-1" {
			t.Fatalf("GET = %q, %v; want tok-1", got, err)
		}
		if d, err := c.PTTL(ctx, key).Result(); err != nil || d <= 0 || d > ttl {
			t.Fatalf("PTTL = %v, %v; want in (0, %v]", d, err, ttl)
		}
		if n, err := compareAndDelete.Run(ctx, c, []string{key}, "tok-2").Int64(); err != nil || n != 0 {
			t.Fatalf("compare-and-delete with another token = %d, %v; want 0", n, err)
		}
		if n, err := compareAndDelete.Run(ctx, c, []string{key}, "tok-1").Int64(); err != nil || n != 1 {
			t.Fatalf("compare-and-delete = %d, %v; want 1", n, err)
		}
		if d, err := c.PTTL(ctx, key).Result(); err != nil || d != -2*time.Nanosecond && d != -2*time.Millisecond {
			// go-redis reports PTTL's -2 as -2ns (its "no key" marker).
			t.Fatalf("PTTL after release = %v, %v; want -2", d, err)
		}
	}
	// EVAL of the body itself (no EVALSHA first), as scripts without a
	// cache do.
	if ok, err := c.SetNX(ctx, key, "tok-3", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	if n, err := c.Eval(ctx, compareAndDeleteBody, []string{key}, "tok-3").Int64(); err != nil || n != 1 {
		t.Fatalf("EVAL compare-and-delete = %d, %v; want 1", n, err)
	}
	if n := redlocktest.Count(in.BackendValues(t, key), "<nil>"); n != 3 {
		t.Fatalf("after release the key is absent on %d backends, want 3", n)
	}
}

const compareAndDeleteBody = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func goRedisPipeline(t *testing.T, c *redis.Client, prefix string) {
	ctx := testCtx(t)
	const n = 8
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + ":" + string(rune('a'+i))
	}
	var acquire []*redis.BoolCmd
	var second *redis.BoolCmd
	var lock *redis.Cmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			acquire = append(acquire, p.SetNX(ctx, k, "v-"+k, 5*time.Second))
		}
		second = p.SetNX(ctx, keys[0], "other", 5*time.Second)
		lock = p.Do(ctx, "LOCK", keys[1], 5000)
		return nil
	})
	// The pipeline's error is its first failed command's: contention
	// (a null) must not be one of them.
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("pipeline: %v", err)
	}
	for i, cmd := range acquire {
		if ok, err := cmd.Result(); err != nil || !ok {
			t.Fatalf("pipelined SetNX %s = %v, %v; want true", keys[i], ok, err)
		}
	}
	if ok, err := second.Result(); err != nil || ok {
		t.Fatalf("pipelined second SetNX = %v, %v; want false", ok, err)
	}
	if err := lock.Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("pipelined LOCK of a held key: err = %v, want redis.Nil", err)
	}
	// Read back and release in a second pipeline; replies keep their order.
	var gets []*redis.StringCmd
	var dels []*redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			gets = append(gets, p.Get(ctx, k))
			dels = append(dels, compareAndDelete.Run(ctx, p, []string{k}, "v-"+k))
		}
		return nil
	}); err != nil {
		t.Fatalf("second pipeline: %v", err)
	}
	for i, k := range keys {
		if v, err := gets[i].Result(); err != nil || v != "v-"+k {
			t.Fatalf("pipelined GET %s = %q, %v", k, v, err)
		}
		if n, err := dels[i].Int64(); err != nil || n != 1 {
			t.Fatalf("pipelined release %s = %d, %v; want 1", k, n, err)
		}
	}
}
