package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// A pipeline of hundreds of locks on one connection, with fresh tokens
// and with tokens of many lengths, fills many of the connection's chunks
// of kept keys and tokens: every reply names its own token, the
// redis-servers hold every key with it, and every release by it deletes
// its key.
func TestPipelinedLocksKeepTheirKeysAndTokens(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t)
	const n = 300
	keys, tokens := make([]string, 2*n), make([]string, 2*n)
	p := c.Pipeline()
	locks := make([]*redis.Cmd, n)
	sets := make([]*redis.BoolCmd, n)
	for i := range n {
		keys[i] = fmt.Sprintf("fresh:%d", i)
		locks[i] = p.Do(ctx, "LOCK", keys[i], 60000)
		keys[n+i] = fmt.Sprintf("set:%d:%s", i, strings.Repeat("k", i%37))
		tokens[n+i] = fmt.Sprintf("tok%d%s", i, strings.Repeat("t", i%53))
		sets[i] = p.SetNX(ctx, keys[n+i], tokens[n+i], 60e9)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("pipelined LOCKs and SETs: %v", err)
	}
	seen := map[string]bool{}
	for i, cmd := range locks {
		v, err := cmd.Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("LOCK %s = %v, %v", keys[i], v, err)
		}
		tok, _ := v[0].(string)
		if len(tok) != 32 || strings.Trim(tok, "0123456789abcdef") != "" || seen[tok] {
			t.Fatalf("LOCK %s token %q: want 32 hex digits, unlike every other", keys[i], tok)
		}
		seen[tok], tokens[i] = true, tok
		if ok, err := sets[i].Result(); err != nil || !ok {
			t.Fatalf("SET %s NX = %v, %v", keys[n+i], ok, err)
		}
	}
	for i := range keys {
		if i%25 != 0 {
			continue
		}
		if v := in.BackendValues(t, keys[i]); redlocktest.Count(v, tokens[i]) != len(v) || len(v) == 0 {
			t.Fatalf("backends hold %s = %v, want %q everywhere", keys[i], v, tokens[i])
		}
	}
	p = c.Pipeline()
	releases := make([]*redis.Cmd, len(keys))
	for i := range keys {
		if i < n {
			releases[i] = p.Do(ctx, "UNLOCK", keys[i], tokens[i])
		} else {
			releases[i] = p.Eval(ctx, `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, []string{keys[i]}, tokens[i])
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("pipelined releases: %v", err)
	}
	for i, cmd := range releases {
		if n, err := cmd.Int64(); err != nil || n != 1 {
			t.Fatalf("release of %s by %q = %d, %v; want 1", keys[i], tokens[i], n, err)
		}
	}
	for i := range keys {
		if i%25 == 0 {
			if v := in.BackendValues(t, keys[i]); redlocktest.Count(v, "<nil>") != len(v) || len(v) == 0 {
				t.Fatalf("backends hold %s = %v after its release, want nothing", keys[i], v)
			}
		}
	}
}
