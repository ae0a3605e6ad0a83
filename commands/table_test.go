package commands

import (
	"strings"
	"testing"
)

// Every entry of the command table must say how it runs in a pipeline and
// how its result counts in metrics: a zero value is a forgotten decision,
// which would make the command a barrier and count it as a plain command
// without anyone having chosen that.
func TestCommandTableComplete(t *testing.T) {
	if len(table) == 0 {
		t.Fatal("empty command table")
	}
	for name, cmd := range table {
		if cmd.name != name || strings.ToLower(name) != name {
			t.Errorf("table[%q] has name %q; want the same, lower-case", name, cmd.name)
		}
		if cmd.run == nil {
			t.Errorf("%s: no run function", name)
		}
		if cmd.pipe == pipeUnset || cmd.pipe > pipeConcurrent {
			t.Errorf("%s: pipeline kind %d not set", name, cmd.pipe)
		}
		if cmd.outcome == outcomeUnset || cmd.outcome > outcomeAcquire {
			t.Errorf("%s: metrics outcome kind %d not set", name, cmd.outcome)
		}
		// A concurrent command is ordered by its keys, so it must be able
		// to name them, or have none that could be shared.
		if cmd.pipe == pipeConcurrent && cmd.keys == keysNone && name != "ping" && name != "echo" {
			t.Errorf("%s: concurrent but names no keys", name)
		}
	}
}

// The decisions themselves, as the proxy sees them through the exported
// functions and the metrics labels.
func TestCommandTableDecisions(t *testing.T) {
	barriers := []string{"auth", "hello", "select", "reset", "quit", "client", "script", "command", "config", "info"}
	for _, name := range barriers {
		if _, ok := PipelineKeys([][]byte{[]byte(name), []byte("x")}); ok {
			t.Errorf("%s runs concurrently; want a barrier", name)
		}
	}
	acquiring := map[string]bool{"lock": true, "set": true}
	for name, cmd := range table {
		ow := &outcomeWriter{Writer: &recorder{}}
		ow.WriteSimple("OK")
		want := "ok"
		if acquiring[name] {
			want = "acquired"
		}
		if got := ow.outcome(cmd); got != want {
			t.Errorf("%s: a success counts as %q, want %q", name, got, want)
		}
		if cmd.mayBlock != nil && name != "lock" {
			t.Errorf("%s: may block; only LOCK … WAIT does", name)
		}
	}
}

// MayBlock reads LOCK's options as LOCK itself does: it reports a wait
// exactly when parseLock accepts the command with a positive WAIT.
func TestMayBlockAgreesWithParseLock(t *testing.T) {
	f := newFixture(t, Options{})
	words := []string{"WAIT", "wait", "TOKEN", "OWNER", "KEEPALIVE", "FENCE", "500", "0", "-1", "", "x"}
	var seqs [][]string
	var grow func(prefix []string)
	grow = func(prefix []string) {
		seqs = append(seqs, prefix)
		if len(prefix) == 4 {
			return
		}
		for _, w := range words {
			grow(append(append([]string(nil), prefix...), w))
		}
	}
	grow(nil)
	for _, opts := range seqs {
		args := [][]byte{[]byte("LOCK"), []byte("k"), []byte("100")}
		for _, o := range opts {
			args = append(args, []byte(o))
		}
		c := &call{s: f.s, w: &recorder{}, name: "lock", args: args[1:]}
		o, ok := f.h.parseLock(c)
		want := ok && o.wait > 0
		if got := MayBlock(args); got != want {
			t.Errorf("LOCK k 100 %q: MayBlock %v, parseLock says waits %v", opts, got, want)
		}
	}
}
