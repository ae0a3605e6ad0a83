package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lock runs LOCK and returns its token and validity.
func lock(t *testing.T, c doer, args ...any) (string, int64) {
	t.Helper()
	res, err := c.Do(ctxT(t), append([]any{"LOCK"}, args...)...).Slice()
	if err != nil {
		t.Fatalf("LOCK %v: %v", args, err)
	}
	if len(res) != 2 {
		t.Fatalf("LOCK %v reply %v: want [token validity]", args, res)
	}
	tok, ok1 := res[0].(string)
	v, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		t.Fatalf("LOCK %v reply types %T %T", args, res[0], res[1])
	}
	return tok, v
}

func TestLockHeldOnBackends(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	tok, validity := lock(t, c, "res", 5000)
	if validity <= 0 || validity > 5000 {
		t.Fatalf("validity %d not in (0, 5000]", validity)
	}
	vals := in.BackendValues(t, "res")
	if n := redlocktest.Count(vals, tok); n < 2 {
		t.Fatalf("token on %d backends (%v), want a majority", n, vals)
	}
	for _, s := range in.Backends {
		pttl, err := s.Client().PTTL(ctxT(t), "res").Result()
		if err != nil || pttl <= 0 || pttl > 5*time.Second {
			t.Fatalf("backend %s pttl %v err %v: want a ttl in (0, 5s]", s.Addr(), pttl, err)
		}
	}
	if n, err := c.Do(ctxT(t), "UNLOCK", "res", tok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %d, %v", n, err)
	}
	if vals := in.BackendValues(t, "res"); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("after UNLOCK backends hold %v", vals)
	}
}

func TestCommandReplies(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	for _, proto := range []int{2, 3} {
		c := in.Client(t, proto)
		ctx := ctxT(t)
		key := "k" + string(rune('0'+proto))
		tok, _ := lock(t, c, key, 10000)
		if _, err := c.Do(ctx, "LOCK", key, 1000).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("LOCK on a held key: %v, want nil", err)
		}
		if got, err := c.Get(ctx, key).Result(); err != nil || got != tok {
			t.Fatalf("GET = %q, %v; want %q", got, err, tok)
		}
		if p, err := c.PTTL(ctx, key).Result(); err != nil || p <= 5*time.Second || p > 10*time.Second {
			t.Fatalf("PTTL = %v, %v", p, err)
		}
		if v, err := c.Do(ctx, "RENEW", key, tok, 20000).Int64(); err != nil || v <= 10000 || v > 20000 {
			t.Fatalf("RENEW = %d, %v", v, err)
		}
		if _, err := c.Do(ctx, "RENEW", key, "other", 1000).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("RENEW with another token: %v, want nil", err)
		}
		if n, err := c.Do(ctx, "UNLOCK", key, "other").Int(); err != nil || n != 0 {
			t.Fatalf("UNLOCK with another token = %d (read: %v)", n, err)
		}
		if n, err := c.Eval(ctx, cad, []string{key}, tok).Int(); err != nil || n != 1 {
			t.Fatalf("EVAL compare-and-delete = %d, %v", n, err)
		}
		if ok, err := c.SetNX(ctx, key, "t2", 3*time.Second).Result(); err != nil || !ok {
			t.Fatalf("SET NX PX = %v, %v", ok, err)
		}
		if ok, err := c.SetNX(ctx, key, "t3", 3*time.Second).Result(); err != nil || ok {
			t.Fatalf("second SET NX PX = %v, %v; want false (null reply)", ok, err)
		}
		if n, err := c.EvalSha(ctx, "2d6d8ba8bbd52f27a1b2b2a94b7d4bf7e5e36e6a", []string{key}, "t2").Result(); err == nil {
			t.Fatalf("EVALSHA of an unknown script = %v, want NOSCRIPT", n)
		} else if !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			t.Fatalf("EVALSHA unknown: %v", err)
		}
		sha, err := c.ScriptLoad(ctx, cad).Result()
		if err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
		if n, err := c.EvalSha(ctx, sha, []string{key}, "t2").Int(); err != nil || n != 1 {
			t.Fatalf("EVALSHA compare-and-delete = %d, %v", n, err)
		}
		if p, err := c.Do(ctx, "PTTL", key).Int(); err != nil || p != -2 {
			t.Fatalf("PTTL of a free key = %d, %v", p, err)
		}
		lock(t, c, key, 10000)
		if n, err := c.Del(ctx, key, "absent").Result(); err != nil || n != 1 {
			t.Fatalf("DEL = %d, %v", n, err)
		}
		if _, err := c.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET after DEL: %v", err)
		}
	}
}

const cad = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func TestBadInputKeepsConnection(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, PoolSize: 1})
	defer c.Close()
	ctx := ctxT(t)
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"LOCK", "k"}, "ERR wrong number of arguments for 'lock' command"},
		{[]any{"LOCK", "k", "soon"}, "ERR value is not an integer or out of range"},
		{[]any{"LOCK", "k", 0}, "ERR invalid expire time in 'lock' command"},
		{[]any{"LOCK", "k", -1}, "ERR invalid expire time in 'lock' command"},
		{[]any{"SET", "k", "v", "NX", "XX", "PX", 100}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "NX", "PX", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"NOSUCH", "a"}, "ERR unknown command 'NOSUCH', with args beginning with: 'a' "},
	}
	id, err := c.Do(ctx, "CLIENT", "ID").Int()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		_, err := c.Do(ctx, tc.args...).Result()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if id2, err := c.Do(ctx, "CLIENT", "ID").Int(); err != nil || id2 != id {
		t.Fatalf("connection changed after errors: id %d -> %d (%v)", id, id2, err)
	}
}

func TestMinorityKilled(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	in.Backends[2].Kill()
	tok, _ := lock(t, c, "res", 5000)
	if n := redlocktest.Count(in.BackendValues(t, "res")[:2], tok); n != 2 {
		t.Fatalf("token on %d live backends, want 2", n)
	}
}

func TestMajorityKilled(t *testing.T) {
	const nodeTimeout = 300 * time.Millisecond
	in := redlocktest.Start(t, redlocktest.Options{NodeTimeout: nodeTimeout})
	c := in.Client(t, 2)
	in.Backends[1].Kill()
	in.Backends[2].Kill()
	start := time.Now()
	_, err := c.Do(ctxT(t), "LOCK", "res", 5000).Result()
	took := time.Since(start)
	// The live backend normally answers ("1 of 3"); on a loaded machine it
	// may miss the node timeout too ("0 of 3"): both are NOQUORUM.
	if err == nil || !(strings.HasPrefix(err.Error(), "NOQUORUM 1 of 3 backends answered: ") ||
		strings.HasPrefix(err.Error(), "NOQUORUM 0 of 3 backends answered: ")) {
		t.Fatalf("LOCK with 2 of 3 backends dead: %v", err)
	}
	// A dead backend refuses at once rather than timing out: the reply
	// names the refused connections.
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("NOQUORUM after %v does not say the dead backends refused the connection: %v", took, err)
	}
	// A SET that missed its deadline may land late; the release retry then
	// removes it, so the live backend is polled rather than read once.
	deadline := time.Now().Add(5 * time.Second)
	for vals := in.BackendValues(t, "res"); vals[0] != "<nil>"; vals = in.BackendValues(t, "res") {
		if time.Now().After(deadline) {
			t.Fatalf("the live backend kept the token after a failed acquire: %v", vals[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStalledBackendBoundedByNodeTimeout(t *testing.T) {
	// Both healthy backends must answer within the node timeout: 50ms is
	// less than a loaded machine can promise them.
	const nodeTimeout = 200 * time.Millisecond
	in := redlocktest.Start(t, redlocktest.Options{NodeTimeout: nodeTimeout})
	c := in.Client(t, 2)
	keys := []string{"resa", "resb", "resc"}
	// A backend node has more than one connection, picked by key, and opens
	// each on first use: every key goes once through the healthy path, so
	// that the node timeout below is not spent dialing a healthy backend.
	for _, k := range keys {
		tok, _ := lock(t, c, k, 1000)
		if err := c.Do(ctxT(t), "UNLOCK", k, tok).Err(); err != nil {
			t.Fatalf("UNLOCK %s: %v", k, err)
		}
	}
	in.Backends[0].Stop()
	t.Cleanup(in.Backends[0].Cont)
	for _, k := range keys {
		start := time.Now()
		tok, _ := lock(t, c, k, 5000)
		// Waiting for the stalled backend would take the backend's own
		// budget for a call without a deadline (5s) at least.
		if took := time.Since(start); took > 5*time.Second/2 {
			t.Fatalf("LOCK with one stalled backend took %v (node timeout %v)", took, nodeTimeout)
		}
		if tok == "" {
			t.Fatal("empty token")
		}
	}
}

func TestFailedAcquireLeavesNoToken(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	// Someone else holds the key on two backends: a majority says no.
	for _, s := range in.Backends[:2] {
		if err := s.Client().Set(ctxT(t), "res", "theirs", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Do(ctxT(t), "LOCK", "res", 5000, "TOKEN", "mine").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK against a majority holder: %v, want nil", err)
	}
	vals := in.BackendValues(t, "res")
	if redlocktest.Count(vals, "mine") != 0 || vals[2] != "<nil>" {
		t.Fatalf("after a failed acquire the backends hold %v", vals)
	}
}
