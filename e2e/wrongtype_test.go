package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// hashLock writes a hash with a ttl, as Redisson's reentrant lock does.
const hashLock = `redis.call("hset",KEYS[1],"f","v") return redis.call("pexpire",KEYS[1],60000)`

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// TestKeyOfAnotherType: over real redis-servers, a key that holds a hash
// on every backend is answered as redis-server answers it (EXISTS 1, its
// PTTL and TTL, GET's WRONGTYPE), never NOQUORUM, since every backend
// answered; the lock commands answer as for a lock held by another (null)
// or a token that holds nothing (0), and leave the hash as it was.
func TestKeyOfAnotherType(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	if n, err := c.Eval(ctx, hashLock, []string{"hx"}).Int(); err != nil || n != 1 {
		t.Fatalf("EVAL = %v, %v", n, err)
	}
	if n, err := c.Exists(ctx, "hx").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS = %v, %v; want 1", n, err)
	}
	if d, err := c.PTTL(ctx, "hx").Result(); err != nil || d <= 0 || d > time.Minute {
		t.Fatalf("PTTL = %v, %v; want in (0, 1m]", d, err)
	}
	if d, err := c.TTL(ctx, "hx").Result(); err != nil || d <= 0 || d > time.Minute {
		t.Fatalf("TTL = %v, %v; want in (0, 1m]", d, err)
	}
	if v, err := c.Get(ctx, "hx").Result(); err == nil || err.Error() != wrongType {
		t.Fatalf("GET = %q, %v; want %s", v, err, wrongType)
	}
	for _, tc := range []struct {
		cmd  []any
		want any // nil: a null reply
	}{
		{[]any{"UNLOCK", "hx", "t"}, int64(0)},
		{[]any{"RENEW", "hx", "t", 1000}, nil},
		{[]any{"DELIFEQ", "hx", "t"}, int64(0)},
		{[]any{"DELEX", "hx", "IFEQ", "t"}, int64(0)},
		{[]any{"SET", "hx", "t", "XX", "PX", 1000, "IFEQ", "t"}, nil},
		{[]any{"SET", "hx", "n", "PX", 1000, "IFEQ", "t"}, nil},
		{[]any{"LOCK", "hx", 1000}, nil},
		{[]any{"LOCK", "hx", 1000, "SHARED"}, nil},
		{[]any{"LOCK", "hx", 1000, "PERMITS", 2}, nil},
		{[]any{"LOCK", "hx", 1000, "OWNER", "o"}, nil},
		{[]any{"LOCK", "hx", 1000, "FENCE"}, nil},
		{[]any{"LOCK", "hx", 1000, "WAIT", 50, "FAIR"}, nil},
		{[]any{"SET", "hx", "v", "NX", "PX", 1000}, nil},
	} {
		got, err := c.Do(ctx, tc.cmd...).Result()
		switch {
		case tc.want == nil && err == redis.Nil:
		case tc.want != nil && err == nil && got == tc.want:
		default:
			t.Errorf("%v = %v, %v; want %v", tc.cmd, got, err, tc.want)
		}
	}
	if n, err := c.Eval(ctx, `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, []string{"hx"}, "t").Int(); err != nil || n != 0 {
		t.Errorf("compare-and-delete script = %v, %v; want 0 (as UNLOCK)", n, err)
	}
	// Nothing above changed the hash on any backend.
	for _, s := range in.Backends {
		if v, err := s.Client().HGet(ctx, "hx", "f").Result(); err != nil || v != "v" {
			t.Errorf("backend %s: HGET hx f = %q, %v", s.Addr(), v, err)
		}
		if d, err := s.Client().PTTL(ctx, "hx").Result(); err != nil || d <= 0 {
			t.Errorf("backend %s: PTTL hx = %v, %v", s.Addr(), d, err)
		}
	}
	if n, err := c.Del(ctx, "hx").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %v, %v", n, err)
	}
	if n, err := c.Exists(ctx, "hx").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after DEL = %v, %v", n, err)
	}
}

// TestKeyOfAnotherTypeMinority: a hash on one backend (written behind the
// proxy's back) is that backend's answer, a "no": the two others still
// grant and read the lock, and a hash on two backends is the majority's
// WRONGTYPE.
func TestKeyOfAnotherTypeMinority(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	if err := in.Backends[0].Client().HSet(ctx, "k", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	tok, _ := lock(t, c, "k", 10000)
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != tok {
		t.Fatalf("GET = %q, %v; want %s", v, err, tok)
	}
	if n, err := c.Do(ctx, "UNLOCK", "k", tok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v; want 1", n, err)
	}
	if err := in.Backends[1].Client().HSet(ctx, "k", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err == nil || err.Error() != wrongType {
		t.Fatalf("GET with a hash on two backends = %q, %v; want %s", v, err, wrongType)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS = %v, %v; want 1", n, err)
	}
	if d, err := c.PTTL(ctx, "k").Result(); err != nil || d != -1 {
		t.Fatalf("PTTL of a hash without expiry = %v, %v; want -1", d, err)
	}
	if got, err := c.Do(ctx, "LOCK", "k", 1000).Result(); err != redis.Nil {
		t.Fatalf("LOCK = %v, %v; want null", got, err)
	}
	vals := in.BackendValues(t, "k")
	if strings.Count(strings.Join(vals, " "), "WRONGTYPE") != 2 || vals[2] != "<nil>" {
		t.Fatalf("backends after a refused LOCK: %v; want the two hashes and nothing on the third", vals)
	}
}
