package commands

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/logbuf"
)

// TestDebugScriptVerdicts: at debug level each EVAL logs how its script
// was judged; at info level nothing.
func TestDebugScriptVerdicts(t *testing.T) {
	release := `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	calls := [][]string{
		{"EVAL", release, "1", "k", "t"},
		{"EVAL", "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 1000)", "1", "k", "v"},
		{"EVAL", "return redis.call('keys', '*')", "0"},
	}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var out logbuf.Buffer
		f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level}))})
		for _, c := range calls {
			f.do(c...)
		}
		got := out.String()
		for _, want := range []string{"script recognised: run natively", "script admitted by the static check: replicated", "script refused by the static check"} {
			if strings.Contains(got, want) != (level == slog.LevelDebug) {
				t.Errorf("level %v: line %q present %v:\n%s", level, want, strings.Contains(got, want), got)
			}
		}
	}
}
