package compat

import (
	"strconv"
	"strings"
	"testing"
)

// TestRedisCLIShared takes read locks with redis-cli (RESP2 and RESP3)
// through two proxies over the same backends: both readers are granted,
// a writer is not, GET shows the key held shared, and each reader's
// UNLOCK frees its own hold.
func TestRedisCLIShared(t *testing.T) {
	cli := lookTool(t, "redis-cli", "apt-get install redis-tools")
	in := startRedlockd(t)
	second := startSecond(t, in)
	for _, proto := range []string{"-2", "-3"} {
		t.Run(proto, func(t *testing.T) {
			ctx := testCtx(t)
			key := "cli:shared" + proto
			var toks []string
			for _, via := range []*instance{in, second} {
				fields := strings.Fields(via.redisCLI(t, ctx, cli, proto, "LOCK", key, "10000", "SHARED"))
				if len(fields) != 2 || !strings.HasPrefix(fields[0], "shared:") {
					t.Fatalf("LOCK SHARED printed %q, want a reader token and a validity", fields)
				}
				if v, err := strconv.Atoi(fields[1]); err != nil || v <= 0 || v > 10000 {
					t.Fatalf("LOCK SHARED validity %q", fields[1])
				}
				toks = append(toks, fields[0])
			}
			if toks[0] == toks[1] {
				t.Fatalf("two readers got one token %q", toks[0])
			}
			if out := strings.TrimSpace(second.redisCLI(t, ctx, cli, proto, "LOCK", key, "10000")); out != "" {
				t.Fatalf("LOCK among readers printed %q, want nothing (null)", out)
			}
			if out := strings.TrimSpace(in.redisCLI(t, ctx, cli, proto, "GET", key)); out != "redlockd:shared" {
				t.Fatalf("GET of a key held shared = %q", out)
			}
			for i, tok := range toks {
				if out := strings.TrimSpace(second.redisCLI(t, ctx, cli, proto, "UNLOCK", key, tok)); out != "1" {
					t.Fatalf("UNLOCK of reader %d = %q, want 1", i, out)
				}
			}
			if out := strings.TrimSpace(in.redisCLI(t, ctx, cli, proto, "EXISTS", key)); out != "0" {
				t.Fatalf("EXISTS after both readers left = %q", out)
			}
		})
	}
}
