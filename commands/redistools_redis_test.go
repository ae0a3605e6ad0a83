package commands_test

import (
	"bufio"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// infoFields parses INFO's "field:value" lines.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			out[k] = v
		}
	}
	return out
}

// TestInfoFieldsToolsRead: the INFO fields that redis-cli --stat and
// monitoring tools read are there with real values, the keyspace counts
// the backends' keys, DBSIZE gives the majority's count of the
// connection's database, and CONFIG GET databases says SELECT's range.
func TestInfoFieldsToolsRead(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := t.Context()
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Do(ctx, "LOCK", k, "60000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c3 := redis.NewClient(&redis.Options{Addr: in.Addr, DB: 3, Protocol: 2, DisableIdentity: true})
	defer c3.Close()
	if err := c3.Do(ctx, "LOCK", "d3", "60000").Err(); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	f := infoFields(info)
	for _, name := range []string{"used_memory", "connected_clients", "blocked_clients", "total_commands_processed",
		"total_connections_received", "instantaneous_ops_per_sec"} {
		n, err := strconv.ParseInt(f[name], 10, 64)
		if err != nil || n < 0 {
			t.Errorf("INFO %s = %q, want a count", name, f[name])
		}
	}
	if n, _ := strconv.Atoi(f["used_memory"]); n < 1<<16 {
		t.Errorf("used_memory %d: not the heap", n)
	}
	// The proxy keeps its own keys beside the locks (the lock horizon),
	// so the counts are at least the locks taken.
	if k := keysOf(f["db0"]); k < 3 {
		t.Errorf("db0 keys %d (line %q), want at least the 3 locks", k, f["db0"])
	}
	if k := keysOf(f["db3"]); k < 1 {
		t.Errorf("db3 keys %d (line %q), want the lock of db 3", k, f["db3"])
	}
	n0, err := c.DBSize(ctx).Result()
	if err != nil || n0 != int64(keysOf(f["db0"])) {
		t.Errorf("DBSIZE = %d, %v; want db0's count %d", n0, err, keysOf(f["db0"]))
	}
	n3, err := c3.DBSize(ctx).Result()
	if err != nil || n3 != int64(keysOf(f["db3"])) {
		t.Errorf("DBSIZE in db 3 = %d, %v; want db3's count %d", n3, err, keysOf(f["db3"]))
	}
	// The counts are the backends' own: compare with one of them.
	direct, err := in.Backends[0].Client().DBSize(ctx).Result()
	if err != nil || direct != n0 {
		t.Errorf("backend DBSIZE %d, %v; proxy %d", direct, err, n0)
	}
	got, err := c.ConfigGet(ctx, "databases").Result()
	if err != nil || got["databases"] != "16" {
		t.Errorf("CONFIG GET databases = %v, %v", got, err)
	}
	all, err := c.ConfigGet(ctx, "*").Result()
	if err != nil || all["databases"] != "16" {
		t.Errorf("CONFIG GET * = %v, %v", all, err)
	}
}

func keysOf(line string) int {
	m := regexp.MustCompile(`^keys=(\d+),expires=\d+,avg_ttl=0$`).FindStringSubmatch(line)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestRedisCLIStat runs the real redis-cli --stat against the proxy over
// real redis-servers: every column is a real number (no
// -9223372036854775808 for a field INFO lacks).
func TestRedisCLIStat(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	if err := c.Do(t.Context(), "LOCK", "s", "60000").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := childproc.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(in.Port), "--stat", "-i", "0.1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var header string
	rows := 0
	row := regexp.MustCompile(`^(\d+)\s+(\d+(\.\d+)?[BKMGT])\s+(\d+)\s+(\d+)\s+(\d+) \(\+(\d+)\)\s+(\d+)\s*$`)
	for rows < 3 && sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "keys"):
			header = l
		case strings.HasPrefix(l, "-") || strings.TrimSpace(l) == "":
		default:
			m := row.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("redis-cli --stat row %q: not all real numbers (header %q)", l, header)
			}
			if keys, _ := strconv.Atoi(m[1]); keys < 1 {
				t.Errorf("row %q: keys %d, want the lock", l, keys)
			}
			rows++
		}
	}
	if rows < 3 {
		t.Fatalf("redis-cli --stat printed %d rows: %v", rows, sc.Err())
	}
}

// TestRedisCLIBigKeys runs the real redis-cli --bigkeys against the
// proxy: it reads DBSIZE and walks SCAN to the end without an error.
func TestRedisCLIBigKeys(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	if err := in.Client(t, 2).Do(t.Context(), "LOCK", "big", "60000").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := childproc.CombinedOutput(childproc.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(in.Port), "--bigkeys"))
	if err != nil {
		t.Fatalf("redis-cli --bigkeys: %v\n%s", err, out)
	}
	for _, bad := range []string{"Couldn't determine DBSIZE", "SCAN error", "-9223372036854775808"} {
		if strings.Contains(string(out), bad) {
			t.Fatalf("redis-cli --bigkeys said %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(string(out), "Sampled") {
		t.Fatalf("redis-cli --bigkeys did not finish its summary:\n%s", out)
	}
}

// TestBlockedClientsAndVersion: a LOCK … WAIT that waits counts in
// blocked_clients until it ends; HELLO answers as Redis 7.2 does, and
// INFO server names redlockd's own version.
func TestBlockedClientsAndVersion(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Commands: commands.Options{Version: "v1.2.3-test"}})
	ctx := t.Context()
	holder := in.Client(t, 2)
	res, err := holder.Do(ctx, "LOCK", "w", "60000").Slice()
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- in.Client(t, 2).Do(ctx, "LOCK", "w", "60000", "WAIT", "20000").Err() }()
	blocked := func() string { return infoFields(holder.Info(ctx, "clients").Val())["blocked_clients"] }
	for blocked() != "1" {
		select {
		case err := <-waited:
			t.Fatalf("LOCK … WAIT ended (%v) before INFO counted it", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := holder.Do(ctx, "UNLOCK", "w", res[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if b := blocked(); b != "0" {
		t.Errorf("blocked_clients %s after the wait ended", b)
	}
	c3 := in.Client(t, 3)
	hello, err := c3.Do(ctx, "HELLO", "3").Result()
	m, ok := hello.(map[any]any)
	if err != nil || !ok || m["server"] != "redis" || m["version"] != "7.2.0" || len(m) != 7 {
		t.Fatalf("HELLO 3 = %#v, %v; want Redis 7.2's seven fields", hello, err)
	}
	if v := infoFields(c3.Info(ctx, "server").Val())["redlockd_version"]; v != "v1.2.3-test" {
		t.Errorf("INFO server redlockd_version = %q", v)
	}
}

// TestEmbeddedKeyspace: in embedded mode the in-process nodes count their
// keys too, so DBSIZE, INFO keyspace and redis-cli --bigkeys work in the
// quick start as over real servers.
func TestEmbeddedKeyspace(t *testing.T) {
	in := redlocktest.StartMemory(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := t.Context()
	for _, k := range []string{"a", "b"} {
		if err := c.Do(ctx, "LOCK", k, "60000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.DBSize(ctx).Result()
	if err != nil || n < 2 {
		t.Fatalf("DBSIZE = %d, %v; want at least the 2 locks", n, err)
	}
	if k := keysOf(infoFields(c.Info(ctx).Val())["db0"]); k != int(n) {
		t.Errorf("INFO keyspace db0 keys %d, DBSIZE %d", k, n)
	}
	out, err := childproc.CombinedOutput(childproc.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(in.Port), "--bigkeys"))
	if err != nil || strings.Contains(string(out), "Couldn't determine DBSIZE") {
		t.Fatalf("redis-cli --bigkeys: %v\n%s", err, out)
	}
}
