package proxy

import (
	"bufio"
	"fmt"
	"github.com/redlockd/redlockd/testkit/resptest"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestRESP3MatchesRedis sends the same commands after HELLO 3 to a real
// redis-server and to the proxy and compares the replies: byte for byte
// where the content is the same on both, and otherwise their RESP3 shape
// (types and aggregate sizes), so a client's parser sees the same thing.
func TestRESP3MatchesRedis(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t, Options{})
	real, ours := resptest.Dial(t, rs.Addr()), resptest.Dial(t, ts.addr)
	// HELLO's values differ (version, id), its keys and their types not.
	hr, ho := do(t, real, "HELLO", "3"), do(t, ours, "HELLO", "3")
	if s1, s2 := helloKeys(t, hr), helloKeys(t, ho); s1 != s2 {
		t.Fatalf("HELLO 3 keys and types:\nredis: %s\nproxy: %s", s1, s2)
	}
	exact := [][]string{
		{"PING"},
		{"PING", "hi"},
		{"GET", "missing"},
		{"SET", "k", "t", "NX", "PX", "10000"},
		{"SET", "k", "u", "NX", "PX", "10000"},
		{"GET", "k"},
		{"EXISTS", "k", "missing"},
		{"DELIFEQ", "k", "nobody"}, // unknown to redis 7: compared as an error below
		{"EVALSHA", "0000000000000000000000000000000000000000", "1", "k", "t"},
		{"EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "k", "u"},
		{"EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "k", "t"},
		{"PTTL", "k"},
		{"TTL", "k"},
		{"CONFIG", "GET", "appendonly"},
		{"GET"},
		{"SET", "k", "v", "NX", "PX", "0"},
		{"SELECT", "0"},
		{"CLIENT", "SETNAME", "x"},
		{"COMMAND", "DOCS", "nosuchcommand"},
	}
	for _, cmd := range exact {
		r, o := do(t, real, cmd...), do(t, ours, cmd...)
		if cmd[0] == "DELIFEQ" { // Redis 7 has no DELIFEQ; both must still be one reply
			if r[0] != '-' || o[0] != ':' {
				t.Errorf("%v: redis %q, proxy %q", cmd, r, o)
			}
			continue
		}
		if r != o {
			t.Errorf("%v:\nredis: %q\nproxy: %q", cmd, r, o)
		}
	}
	shaped := [][]string{
		{"CONFIG", "GET", "save"}, // %1 map, the value is the server's own
		{"INFO"},                  // verbatim string "=N\r\ntxt:…"
		{"INFO", "server"},
		{"CLIENT", "INFO"},
		{"CLIENT", "ID"},
		{"COMMAND", "COUNT"},
	}
	for _, cmd := range shaped {
		r, o := do(t, real, cmd...), do(t, ours, cmd...)
		if s1, s2 := shape(t, r), shape(t, o); s1 != s2 {
			t.Errorf("%v shape:\nredis: %s %q\nproxy: %s %q", cmd, s1, clip(r), s2, clip(o))
		}
	}
	// Both verbatim replies carry the txt format.
	for _, r := range []string{do(t, real, "INFO"), do(t, ours, "INFO")} {
		if _, rest, _ := strings.Cut(r, "\r\n"); !strings.HasPrefix(rest, "txt:") {
			t.Errorf("INFO is not a txt verbatim string: %q", clip(r))
		}
	}
	// COMMAND DOCS without arguments is a map on both (redis-cli reads it).
	if r, o := do(t, real, "COMMAND", "DOCS"), do(t, ours, "COMMAND", "DOCS"); r[0] != '%' || o[0] != '%' {
		t.Errorf("COMMAND DOCS: redis %q, proxy %q", clip(r), clip(o))
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// do sends cmd and returns the raw bytes of one reply.
func do(t *testing.T, c *resptest.Conn, cmd ...string) string {
	t.Helper()
	c.Send(cmd...)
	var out strings.Builder
	if err := readRESP3(c.R, &out, nil); err != nil {
		t.Fatalf("%v: reading reply: %v (so far %q)", cmd, err, out.String())
	}
	return out.String()
}

// readRESP3 copies one RESP3 value to raw and, when sh is not nil, appends
// its shape: each type byte, with the size of aggregates.
func readRESP3(rd *bufio.Reader, raw *strings.Builder, sh *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	raw.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	typ, body := line[0], strings.TrimSuffix(line[1:], "\r\n")
	if sh != nil {
		sh.WriteByte(typ)
	}
	switch typ {
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		raw.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if sh != nil {
			sh.WriteString(body + "(")
			defer sh.WriteByte(')')
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for range n {
			if err := readRESP3(rd, raw, sh); err != nil {
				return err
			}
		}
	}
	return nil
}

func shape(t *testing.T, reply string) string {
	t.Helper()
	var raw, sh strings.Builder
	if err := readRESP3(bufio.NewReader(strings.NewReader(reply)), &raw, &sh); err != nil {
		t.Fatalf("re-reading %q: %v", clip(reply), err)
	}
	return sh.String()
}

// helloKeys renders HELLO's map as its keys with each value's type.
func helloKeys(t *testing.T, reply string) string {
	t.Helper()
	rd := bufio.NewReader(strings.NewReader(reply))
	var raw strings.Builder
	line, _ := rd.ReadString('\n')
	if !strings.HasPrefix(line, "%") {
		t.Fatalf("HELLO 3 reply is not a map: %q", clip(reply))
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	parts := []string{strings.TrimSpace(line)}
	for range n {
		raw.Reset()
		if err := readRESP3(rd, &raw, nil); err != nil {
			t.Fatal(err)
		}
		key := raw.String()
		var sh strings.Builder
		raw.Reset()
		if err := readRESP3(rd, &raw, &sh); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, strings.TrimSpace(key[strings.Index(key, "\n")+1:])+"="+sh.String())
	}
	return strings.Join(parts, " ")
}
