package embedded

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMain(m *testing.M) {
	// A pool whose server died keeps a dialing goroutine (with a sleep on
	// top of it) until the client is closed.
	leaktest.VerifyTestMain(m)
}

// newTestRedis returns a Redis node on addr, closed when the test ends:
// the node the engine's answers are compared with.
func newTestRedis(t *testing.T, addr string) *backend.Redis {
	t.Helper()
	r, err := backend.NewRedis(addr, backend.RedisOptions{})
	if err != nil {
		t.Fatalf("NewRedis(%q): %v", addr, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// checkStrings compares the string keys of c's server with want ("" for
// absent).
func checkStrings(t *testing.T, c *redis.Client, want map[string]string) {
	t.Helper()
	for k, w := range want {
		v, err := c.Get(t.Context(), k).Result()
		if errors.Is(err, redis.Nil) {
			v, err = "", nil
		}
		if err != nil || v != w {
			t.Errorf("%s = %q, %v; want %q", k, v, err, w)
		}
	}
}

func userScript(src string) *quorum.Script {
	sum := sha1.Sum([]byte(src))
	return &quorum.Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

func evalCmd(src string, keys []string, args ...string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.Eval, Script: userScript(src), Keys: keys, Args: args}
}

// TestRedisSemantics runs semanticsCases, which TestMemorySemantics runs
// on the in-memory node, on a Redis node.
func TestRedisSemantics(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	for _, tc := range semanticsCases {
		t.Run(tc.name, func(t *testing.T) {
			if err := srv.Client().FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				got, tok, err := runStep(t.Context(), r, st)
				if err != nil {
					t.Fatalf("step %d %s: %v", i, st.op, err)
				}
				if got != st.want || tok != st.wantTok {
					t.Fatalf("step %d %s %s: got (%v, %q), want (%v, %q)", i, st.op, st.key, got, tok, st.want, st.wantTok)
				}
			}
		})
	}
}
