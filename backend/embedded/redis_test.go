package embedded

import (
	"testing"

	"github.com/redlockd/redlockd/backend"
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
