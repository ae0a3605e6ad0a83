package e2e

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// replicatedBodies are scripts no table recognises; run twice on one key,
// each answers deterministically.
var replicatedBodies = []string{
	`return {1, "x", {redis.status_reply("FINE"), false}, 3}`,
	`return false`,
	`return redis.error_reply("MYERR no")`,
	`if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 60000) then return 1 end return redis.call('get', KEYS[1])`,
	`redis.call('hincrby', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], 60000) return redis.call('hgetall', KEYS[1])`,
}

// TestReplicatedScriptRepliesAsRedis: a replicated script's reply reaches
// a RESP2 and a RESP3 client exactly as one redis-server's would, alone
// and in a pipeline.
func TestReplicatedScriptRepliesAsRedis(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	single := redistest.Start(t)
	for _, proto := range []int{2, 3} {
		ctx := ctxT(t)
		proxy := in.Client(t, proto)
		direct := redis.NewClient(&redis.Options{Addr: single.Addr(), Protocol: proto})
		t.Cleanup(func() { direct.Close() })
		key := func(i int) string { return fmt.Sprintf("s%d-%d", proto, i) }
		// First run: one command at a time.
		for i, b := range replicatedBodies {
			want := render(direct.Do(ctx, "EVAL", b, 1, key(i), "tok"))
			if got := render(proxy.Do(ctx, "EVAL", b, 1, key(i), "tok")); got != want {
				t.Errorf("RESP%d %q: proxy %s, redis %s", proto, b, got, want)
			}
		}
		// Second run: in one pipeline, the keys now taken.
		run := func(c *redis.Client) []string {
			cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, b := range replicatedBodies {
					p.Do(ctx, "EVAL", b, 1, key(i), "tok")
				}
				return nil
			})
			out := make([]string, len(cmds))
			for i, c := range cmds {
				out[i] = render(c.(*redis.Cmd))
			}
			return out
		}
		want, got := run(direct), run(proxy)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("RESP%d pipelined %q: proxy %s, redis %s", proto, replicatedBodies[i], got[i], want[i])
			}
		}
	}
	if vals := in.BackendValues(t, "s2-3"); redlocktest.Count(vals, "tok") != 3 {
		t.Fatalf("the set by script is on %v", vals)
	}
}

func render(c *redis.Cmd) string {
	return fmt.Sprintf("%#v %v", c.Val(), c.Err())
}
