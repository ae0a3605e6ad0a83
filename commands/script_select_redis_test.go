package commands

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// selectArgs are SELECT arguments that Lua's tonumber and Redis read in
// their own ways: hex and hex floats, spaces, decimals, exponents, signs,
// a NUL byte, inf and nan, values past an int or past 1e17, and strings
// that are no number at all.
var selectArgs = []string{
	"0x3", " 3 ", "3.0", "1e0", ".3e1", "3.", "0X3", "0x1p1", "0x1.8p1", "+3", "\v3\f", "3\x00junk",
	"03", "-0", "-0x0", "3.5", "0x", "3e", "3abc", "", "inf", "-infinity", "nan", "nan(abc)",
	"1e-400", "16", "-1", "-0x3", "4294967296", "-2147483649", "2147483647", "1e16", "99999999999999999", "1e18", "1e19",
}

// selectScripts SELECT their db as the libraries do, then write KEYS[1];
// the leading newlines put the SELECT on a line of its own, which a
// failed SELECT's error names.
var selectScripts = []struct{ name, body string }{
	{"tonumber", "\n\nredis.call('select', tonumber(ARGV[1]))\nreturn redis.call('set', KEYS[1], ARGV[2], 'PX', 60000)"},
	{"string", "redis.call('select', ARGV[1]) return redis.call('set', KEYS[1], ARGV[2], 'PX', 60000)"},
	{"pcall", "redis.pcall('select', tonumber(ARGV[1])) return redis.call('set', KEYS[1], ARGV[2], 'PX', 60000)"},
}

// TestScriptSelectAsRedis: for each SELECT argument and script, the proxy
// gives the reply a plain redis-server gives, and the write lands in the
// same db: on the plain server, and on every backend. The connection is
// in db 2 first, where a SELECT through redis.pcall that fails leaves the
// script.
func TestScriptSelectAsRedis(t *testing.T) {
	plain := redistest.Start(t)
	servers, _, f := scriptStack(t, nil)
	ctx := context.Background()
	pc := redis.NewClient(&redis.Options{Addr: plain.Addr(), DB: 2, DisableIdentity: true})
	t.Cleanup(func() { pc.Close() })
	if got := f.do("SELECT", "2"); got != "+OK" {
		t.Fatalf("SELECT 2 = %s", got)
	}
	for _, sc := range selectScripts {
		for i, arg := range selectArgs {
			key := fmt.Sprintf("sel:%s:%d", sc.name, i)
			marker := "v" + key
			want, err := pc.Do(ctx, "EVAL", sc.body, 1, key, arg, marker).Text()
			var re redis.Error
			if errors.As(err, &re) {
				want = "-" + re.Error()
			} else if err != nil {
				t.Fatalf("plain EVAL: %v", err)
			} else {
				want = "+" + want
			}
			got := f.do(eval(sc.body, k1(key), arg, marker)...)
			if got != want {
				t.Errorf("%s %q: proxy %q, redis-server %q", sc.name, arg, got, want)
				continue
			}
			wantDB := dbHolding(t, plain, key, marker)
			for b, s := range servers {
				if db := dbHolding(t, s, key, marker); db != wantDB {
					t.Errorf("%s %q: backend %d has the key in db %d, redis-server in db %d", sc.name, arg, b, db, wantDB)
				}
			}
		}
	}
}

// dbHolding is the db of s in which key holds val (-1: none).
func dbHolding(t *testing.T, s *redistest.Server, key, val string) int {
	t.Helper()
	found := -1
	for db := 0; db < 16; db++ {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db, DisableIdentity: true})
		v, err := c.Get(context.Background(), key).Result()
		c.Close()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			t.Fatalf("GET %s in db %d: %v", key, db, err)
		case v == val && found >= 0:
			t.Fatalf("key %s in db %d and db %d", key, found, db)
		case v == val:
			found = db
		}
	}
	return found
}
