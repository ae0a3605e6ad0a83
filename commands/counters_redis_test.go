package commands_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestLockCountersAreOneRecord runs lock commands of every kind (the
// proxy's own, a library's extend script, go-redsync's touch-or-setnx)
// against a proxy over real redis-servers, then reads INFO stats and
// /metrics: both count what each quorum operation did, so they agree with
// each other and with what was run, and a command's outcome follows the
// quorum's verdict (a GET of a free key is ok, not contended).
func TestLockCountersAreOneRecord(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := t.Context()
	steps := []struct {
		args []any
		want any // the reply; nil for a null
	}{
		{[]any{"SET", "a", "t1", "NX", "PX", 10000}, "OK"},
		{[]any{"SET", "a", "t2", "NX", "PX", 10000}, nil},
		{[]any{"GET", "free"}, nil},
		{[]any{"GET", "a"}, "t1"},
		{[]any{"EVAL", commands.RedlockExtendV5, 1, "a", "t1", 20000}, int64(1)},
		{[]any{"EVAL", commands.RedsyncTouchOrSetNX, 1, "b", "t3", 10000}, int64(1)},
		{[]any{"UNLOCK", "a", "t1"}, int64(1)},
		{[]any{"UNLOCK", "a", "t1"}, int64(0)},
	}
	for _, s := range steps {
		got, err := c.Do(ctx, s.args...).Result()
		if err == redis.Nil {
			got, err = nil, nil
		}
		if err != nil || got != s.want {
			t.Fatalf("%v: %#v, %v; want %#v", s.args[0], got, err, s.want)
		}
	}
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, in.Metrics)
	ops := series(body, `redlockd_quorum_operations_total\{op="(\w+)",outcome="(\w+)"\} (\d+)`)
	fromMetrics := map[string]int64{
		"locks_acquired":  ops["acquire/ok"] + ops["reenter/ok"] + ops["force_set/ok"],
		"locks_extended":  ops["extend/ok"],
		"locks_contended": ops["acquire/contended"] + ops["reenter/contended"] + ops["force_set/contended"] + ops["extend/contended"],
		"locks_noquorum":  ops["acquire/no_quorum"] + ops["reenter/no_quorum"] + ops["force_set/no_quorum"] + ops["extend/no_quorum"],
		"locks_released":  ops["release/ok"],
	}
	want := map[string]int64{
		"locks_acquired": 1, "locks_extended": 2, "locks_contended": 1, "locks_noquorum": 0, "locks_released": 1,
	}
	for field, n := range want {
		m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r$`).FindStringSubmatch(info)
		if m == nil {
			t.Errorf("INFO stats has no %s:\n%s", field, info)
			continue
		}
		if got, _ := strconv.ParseInt(m[1], 10, 64); got != n || fromMetrics[field] != n {
			t.Errorf("%s: INFO %d, /metrics %d, want %d", field, got, fromMetrics[field], n)
		}
	}
	cmds := series(body, `redlockd_commands_total\{command="(\w+)",outcome="(\w+)"\} (\d+)`)
	for key, n := range map[string]int64{
		"set/acquired": 1, "set/contended": 1, "get/ok": 2, "get/contended": 0,
		"eval/ok": 2, "unlock/ok": 1, "unlock/contended": 1,
	} {
		if cmds[key] != n {
			t.Errorf("redlockd_commands_total %s = %d, want %d", key, cmds[key], n)
		}
	}
}

// scrape is the body /metrics serves.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler(m).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// series maps "label1/label2" to the value of each line matching re.
func series(body, re string) map[string]int64 {
	out := map[string]int64{}
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseInt(m[3], 10, 64)
		out[m[1]+"/"+m[2]] = n
	}
	return out
}
