package commands

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestReplicatedUnboundedRefused: a script whose running time the check
// cannot bound, or a request over the caps, is refused with an error that
// names the construct, before any backend sees it: its key is untouched
// and no backend has loaded it. A script that writes first and only then
// loops without bound is refused as a whole, so its write never lands.
func TestReplicatedUnboundedRefused(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	const set = `redis.call('set', KEYS[1], 'written', 'PX', 60000) `
	argv := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "a"
		}
		return out
	}
	triple := `local n=0 for i=1,#ARGV do for j=1,#ARGV do for k=1,#ARGV do n=n+1 end end end return n`
	for _, tc := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{"the 600-ARGV triple loop", triple, argv(600), "a loop over #ARGV nested in a loop over #ARGV"},
		{"a write then a nested loop", set + `for _, a in ipairs(ARGV) do for _, b in ipairs(ARGV) do end end return 1`, argv(600), "a loop over ARGV nested in a loop over ARGV"},
		{"a backtracking pattern", set + `return string.find(ARGV[1], 'a*a*a*a*a*a*b')`, []string{strings.Repeat("a", 40)}, "whose '*' backtracks"},
		{"a pattern from an argument", set + `return string.find(ARGV[2], ARGV[1])`, []string{"a*a*a*a*a*a*b", strings.Repeat("a", 40)}, "with a pattern that is not a literal"},
		{"mset left without expiry", `redis.call('mset', KEYS[1], 'written') return 1`, nil, "command 'MSET' leaves keys without expiry"},
		{"too many arguments", set + `return 1`, argv(1025), "1025 arguments (at most 1024)"},
		{"too large a request", set + `return 1`, []string{strings.Repeat("x", 1<<20)}, "(at most 1 MiB in all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.do(eval(tc.body, k1("k"), tc.args...)...)
			if !strings.HasPrefix(got, "-ERR redlockd cannot replicate this script: ") || !strings.Contains(got, tc.want) {
				t.Fatalf("EVAL = %.300s, want a refusal naming %q", got, tc.want)
			}
			if vals := valuesOf(servers, "k"); !allAre(vals, "") {
				t.Fatalf("after the refusal the backends hold %q", vals)
			}
			for i, s := range servers {
				loaded, err := s.Client().ScriptExists(context.Background(), sha1Hex(tc.body)).Result()
				if err != nil || loaded[0] {
					t.Fatalf("backend %d has the refused script loaded (%v, %v)", i, loaded, err)
				}
			}
		})
	}
	// At the caps the same script runs.
	if got := f.do(eval(set+`return #ARGV`, k1("k"), argv(1024)...)...); got != ":"+strconv.Itoa(1024) {
		t.Fatalf("EVAL with 1024 arguments = %.300s", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "written") {
		t.Fatalf("backends hold %q", vals)
	}
}
