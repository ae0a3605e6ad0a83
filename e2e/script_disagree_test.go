package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestScriptChangesDisagree: a writing script that makes a different
// change on each of three backends (one sets the key, one deletes it,
// one changes nothing) gets docs/commands.md's NOQUORUM for a change
// without a majority, and each backend that changed something is put
// back as it was.
func TestScriptChangesDisagree(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	const key = "disagree"
	for i, v := range map[int]string{1: "a", 2: "b"} {
		if err := in.Backends[i].Client().Set(ctx, key, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	body := `local v = redis.call('get', KEYS[1])
if v == ARGV[1] then return redis.call('del', KEYS[1])
elseif v == ARGV[2] then return 0
else return redis.call('set', KEYS[1], ARGV[3], 'PX', 10000) end`
	err := c.Do(ctx, "EVAL", body, 1, key, "a", "b", "w").Err()
	if want := "NOQUORUM backends disagreed: 3 of 3 answered, no change had a majority"; err == nil || err.Error() != want {
		t.Fatalf("EVAL = %v, want %q", err, want)
	}
	if got, want := in.BackendValues(t, key), []string{"<nil>", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("backends after the failed round hold %q, want %q (each put back)", got, want)
	}
}
