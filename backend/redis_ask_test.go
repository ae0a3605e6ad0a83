package backend

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// askSlot is the slot of askKey, which the second of two masters serves.
const (
	askKey  = "foo"
	askSlot = 12182
)

// startAskCluster starts a cluster of two masters whose second is
// migrating askSlot (holding none of its keys) to the first, which has no
// script cached: a command on askKey meets ASK, then NOSCRIPT at the
// importing master.
func startAskCluster(t *testing.T) (importing *redistest.Server) {
	t.Helper()
	c := redistest.StartCluster(t, 2, 0)
	from, to := c.Masters[1], c.Masters[0]
	c.BeginMigration(t, askSlot, from, to)
	if err := to.Client().ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return to
}

// askingDo sends args after ASKING (the importing master serves the
// slot's keys only so).
func askingDo(t *testing.T, s *redistest.Server, args ...any) *redis.Cmd {
	t.Helper()
	var cmd *redis.Cmd
	_, _ = s.Client().Pipelined(t.Context(), func(p redis.Pipeliner) error {
		p.Do(t.Context(), "asking")
		cmd = p.Do(t.Context(), args...)
		return nil
	})
	return cmd
}

// askingGet is GET key after ASKING.
func askingGet(t *testing.T, s *redistest.Server, key string) (string, error) {
	t.Helper()
	return askingDo(t, s, "get", key).Text()
}

// callAsking is quorum.Call through do with ASKING: the reply of cmd sent after
// ASKING. The deadline bounds the wait.
func callAsking(r *Redis, cmd quorum.Cmd) quorum.Reply {
	ch := make(chan quorum.Reply, 1)
	r.do(time.Now().Add(5*time.Second), cmd, quorum.ReceiverFunc(func(rep quorum.Reply) { ch <- rep }), true)
	return <-ch
}

// A script that follows an ASK redirect to an importing master that lost
// its scripts is sent again as ASKING and a whole EVAL: it runs there, and
// the line carries the next command as before.
func TestClusterAskNoScriptResendsEval(t *testing.T) {
	to := startAskCluster(t)
	cl, err := NewCluster("cluster://"+to.Addr(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	src := `redis.call("set", KEYS[1], ARGV[1]) return ARGV[1]`
	for i, arg := range []string{"a", "b"} { // the second: script cached
		got := mustValue(t, quorum.Call(t.Context(), cl, nodetest.EvalCmd(src, []string{askKey}, arg)))
		if got.Kind != quorum.BulkValue || got.Str != arg {
			t.Fatalf("run %d through ASK after SCRIPT FLUSH = %+v; want %q", i, got, arg)
		}
		if v, err := askingGet(t, to, askKey); err != nil || v != arg {
			t.Fatalf("%s at the importing master after run %d = %q, %v", askKey, i, v, err)
		}
	}
}

// A script sent after ASKING to an importing master that lost its scripts
// is sent again after ASKING too, plain (EVAL) and marked (MULTI … EXEC
// with every script's text): without ASKING the master redirects the
// command, or each command of the step.
func TestRedisAskingMarkedNoScriptKeepsAsking(t *testing.T) {
	to := startAskCluster(t)
	r := newTestRedis(t, to.Addr())
	src := `redis.call("set", KEYS[1], ARGV[1]) return ARGV[1]`
	mark := "redlockd:script:{" + askKey + "}:m"
	for i, cmd := range []quorum.Cmd{nodetest.EvalCmd(src, []string{askKey}, "a"), markedEvalCmd(mark, src, []string{askKey}, "b")} {
		if err := to.Client().ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if cmd.Mark != "" {
			// A multi-key command in an importing slot is served only
			// when each of its keys is there (else TRYAGAIN): the first
			// run left the key, the mark is made here.
			if err := askingDo(t, to, "hset", mark, "z", "1").Err(); err != nil {
				t.Fatal(err)
			}
		}
		got := mustValue(t, callAsking(r, cmd))
		if got.Kind != quorum.BulkValue || got.Str != cmd.Args[0] {
			t.Fatalf("run %d (mark %q) after ASKING and SCRIPT FLUSH = %+v; want %q", i, cmd.Mark, got, cmd.Args[0])
		}
		if v, err := askingGet(t, to, askKey); err != nil || v != cmd.Args[0] {
			t.Fatalf("%s after run %d = %q, %v", askKey, i, v, err)
		}
	}
	if done, err := askingDo(t, to, "hget", mark, "d").Text(); err != nil || done != "1" {
		t.Fatalf("the marked run's after step did not run at the importing master: %q, %v", done, err)
	}
}
