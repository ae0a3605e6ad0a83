package commands_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// releaseBody is the compare-and-delete release script (docs/commands.md, EVAL).
const releaseBody = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// TestPipelinedReleaseCountersAreOneRecord is TestLockCountersAreOneRecord
// for releases in a pipeline, which start without a worker: each one is
// still one quorum operation and one command in INFO and /metrics.
func TestPipelinedReleaseCountersAreOneRecord(t *testing.T) {
	const n = 8
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := t.Context()
	sum := sha1.Sum([]byte(releaseBody))
	sha := hex.EncodeToString(sum[:])
	run := func(cmds func(p redis.Pipeliner, k string, i int)) []redis.Cmder {
		t.Helper()
		out, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				cmds(p, fmt.Sprintf("k%d", i), i)
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		return out
	}
	run(func(p redis.Pipeliner, k string, _ int) { p.Do(ctx, "SET", k, "t", "NX", "PX", 10000) })
	out := run(func(p redis.Pipeliner, k string, i int) {
		if i%2 == 0 {
			p.Do(ctx, "UNLOCK", k, "t")
		} else {
			p.Do(ctx, "EVALSHA", sha, 1, k, "t")
		}
		if i == n-1 {
			p.Do(ctx, "UNLOCK", "free", "t")
		}
	})
	for i, cmd := range out {
		want := int64(1)
		if i == n {
			want = 0
		}
		if got, err := cmd.(*redis.Cmd).Int64(); err != nil || got != want {
			t.Fatalf("%v: %d, %v; want %d", cmd.Args(), got, err, want)
		}
	}
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^locks_released:(\d+)\r$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO stats has no locks_released:\n%s", info)
	}
	body := scrape(t, in.Metrics)
	ops := series(body, `redlockd_quorum_operations_total\{op="(\w+)",outcome="(\w+)"\} (\d+)`)
	if got, _ := strconv.ParseInt(m[1], 10, 64); got != n || ops["release/ok"] != n {
		t.Errorf("locks_released: INFO %d, /metrics %d, want %d", got, ops["release/ok"], n)
	}
	cmds := series(body, `redlockd_commands_total\{command="(\w+)",outcome="(\w+)"\} (\d+)`)
	for key, want := range map[string]int64{
		"set/acquired": n, "unlock/ok": n / 2, "unlock/contended": 1, "evalsha/ok": n / 2,
	} {
		if cmds[key] != want {
			t.Errorf("redlockd_commands_total %s = %d, want %d", key, cmds[key], want)
		}
	}
}
