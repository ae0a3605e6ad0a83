package compat

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// redisCLI runs redis-cli against the instance (extra flags first, then
// the command) and returns its output. Without a terminal redis-cli prints
// raw replies, one per line.
func (in *instance) redisCLI(t *testing.T, ctx context.Context, cli string, args ...string) string {
	t.Helper()
	base := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(in.Port)}
	out := runTool(t, ctx, ".", in.Addr, cli, append(base, args...)...)
	if strings.Contains(out, "ERR") || strings.Contains(out, "Error") {
		t.Fatalf("redis-cli %s: error in output:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// TestRedisCLI runs redis-cli with RESP2 and with -3 (HELLO 3): PING, LOCK,
// contention, GET, INFO, EVAL of the compare-and-delete script, and a
// session fed through stdin, which loads COMMAND DOCS for its hints.
func TestRedisCLI(t *testing.T) {
	cli := lookTool(t, "redis-cli", "apt-get install redis-tools")
	in := startRedlockd(t)
	for _, proto := range []struct{ name, flag string }{{"resp2", "-2"}, {"resp3", "-3"}} {
		t.Run(proto.name, func(t *testing.T) {
			ctx := testCtx(t)
			cliRun := func(args ...string) string {
				t.Helper()
				return in.redisCLI(t, ctx, cli, append([]string{proto.flag}, args...)...)
			}
			if out := strings.TrimSpace(cliRun("PING")); out != "PONG" {
				t.Fatalf("PING: %q", out)
			}
			key := "cli:" + proto.name
			fields := strings.Fields(cliRun("LOCK", key, "10000"))
			if len(fields) != 2 {
				t.Fatalf("LOCK printed %q, want a token and a validity", fields)
			}
			token := fields[0]
			if v, err := strconv.Atoi(fields[1]); err != nil || v <= 0 || v > 10000 {
				t.Fatalf("LOCK validity %q", fields[1])
			}
			// Contention is a null: an empty line in raw output, no error.
			if out := strings.TrimSpace(cliRun("LOCK", key, "10000")); out != "" {
				t.Fatalf("LOCK of a held key printed %q, want nothing", out)
			}
			if out := strings.TrimSpace(cliRun("GET", key)); out != token {
				t.Fatalf("GET = %q, want %q", out, token)
			}
			if out := cliRun("INFO"); !strings.Contains(out, "# Server") || !strings.Contains(out, "redis_version:") {
				t.Fatalf("INFO lacks the server section:\n%s", out)
			}
			if out := strings.TrimSpace(cliRun("EVAL", compareAndDeleteBody, "1", key, token)); out != "1" {
				t.Fatalf("EVAL compare-and-delete = %q, want 1", out)
			}
			// No command arguments: redis-cli starts its REPL, asks for
			// COMMAND DOCS for its hints, then reads the commands from
			// stdin.
			out := runToolStdin(t, ctx, "LOCK "+key+" 1000\nGET "+key+"\n", cli,
				"-h", "127.0.0.1", "-p", strconv.Itoa(in.Port), proto.flag)
			if lines := strings.Fields(out); len(lines) != 3 || lines[0] != lines[2] {
				t.Fatalf("piped LOCK and GET printed %q, want token, validity, token", out)
			}
		})
	}
}

var completed = regexp.MustCompile(`(\d+) requests completed in`)

// TestRedisBenchmark runs redis-benchmark: its CONFIG GET start-up, -t
// ping, and random-key SET NX PX locks, plain and pipelined. It exits on
// the first error reply, so a run that completes proves that contention
// was answered with a null.
func TestRedisBenchmark(t *testing.T) {
	bench := lookTool(t, "redis-benchmark", "apt-get install redis-tools")
	in := startRedlockd(t)
	base := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(in.Port), "-c", "10"}
	for _, tc := range []struct {
		name string
		args []string
		runs int // benchmarks in the run (-t ping is PING_INLINE and PING_MBULK)
	}{
		{"ping", []string{"-n", "2000", "-t", "ping"}, 2},
		{"set-nx-px", []string{"-n", "2000", "-r", "1000", "SET", "lock:__rand_int__", "v", "NX", "PX", "1000"}, 1},
		{"set-nx-px-pipelined", []string{"-n", "2000", "-r", "1000", "-P", "16", "SET", "lock:__rand_int__", "v", "NX", "PX", "1000"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runTool(t, testCtx(t), ".", in.Addr, bench, append(base, tc.args...)...)
			if strings.Contains(out, "Error from server") || strings.Contains(out, "ERR") {
				t.Fatalf("redis-benchmark reported an error:\n%s", out)
			}
			m := completed.FindAllStringSubmatch(out, -1)
			if len(m) != tc.runs {
				t.Fatalf("want %d completed runs, found %d:\n%s", tc.runs, len(m), out)
			}
			for _, r := range m {
				if r[1] != "2000" {
					t.Fatalf("%s requests completed, want 2000:\n%s", r[1], out)
				}
			}
		})
	}
	// 4000 draws of 1000 keys collide for certain: the runs above did
	// meet contention, and it was not an error.
	info, err := in.Client(t, 2).Info(testCtx(t), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`locks_contended:(\d+)`).FindStringSubmatch(info)
	if m == nil || m[1] == "0" {
		t.Fatalf("no contended lock counted in INFO stats:\n%s", info)
	}
}
