package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// respTypeScripts return each of RESP3's types from a replicated script;
// redis-server 7 gives a RESP3 client the type itself and a RESP2 client
// its RESP2 form.
var respTypeScripts = []struct{ name, body string }{
	{"map", `return {map={a=1}}`},
	{"double", `return {double=3.5}`},
	{"double long", `return {double=0.1}`},
	{"double inf", `return {double=1/0}`},
	{"set", `return {set={a=true}}`},
	{"big number", `return {big_number='123456789012345678901234567890'}`},
	{"verbatim", `return {verbatim_string={format='txt',string='hello'}}`},
	{"nested", `return {1, {map={b={double=2.5}}}, {set={x=true}}, false}`},
	{"hgetall under setresp 3", `redis.setresp(3) redis.call('hset', KEYS[1], 'f', 'v') redis.call('pexpire', KEYS[1], 60000) return redis.call('hgetall', KEYS[1])`},
	{"empty hgetall under setresp 3", `redis.setresp(3) return redis.call('hgetall', KEYS[1])`},
	{"get of nothing under setresp 3", `redis.setresp(3) return redis.call('get', KEYS[1])`},
	{"true under setresp 3", `redis.setresp(3) return true`},
	{"false under setresp 3", `redis.setresp(3) return false`},
	{"false", `return false`},
	{"true", `return true`},
}

// TestScriptRESPTypesAsRedis: through the proxy, over real backends, a
// script's reply is byte for byte redis-server 7's, in RESP2 and in
// RESP3 (after HELLO 3), read off raw sockets to both.
func TestScriptRESPTypesAsRedis(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	sameScriptBytes(t, in.Addr, "rt", "proxy")
}

// TestScriptRESPTypesEmbedded: the embedded nodes' scripts give the same
// bytes.
func TestScriptRESPTypesEmbedded(t *testing.T) {
	in := redlocktest.StartMemory(t, redlocktest.Options{})
	sameScriptBytes(t, in.Addr, "rm", "embedded")
}

// sameScriptBytes runs each of respTypeScripts at addr and on a fresh
// redis-server, in RESP2 and RESP3, and fails where the bytes differ;
// what names addr in the failure.
func sameScriptBytes(t *testing.T, addr, keyPrefix, what string) {
	t.Helper()
	single := redistest.Start(t)
	for _, proto := range []int{2, 3} {
		for i, sc := range respTypeScripts {
			t.Run(fmt.Sprintf("RESP%d %s", proto, sc.name), func(t *testing.T) {
				key := fmt.Sprintf("%s%d-%d", keyPrefix, proto, i)
				want := rawEval(t, single.Addr(), proto, sc.body, key)
				if got := rawEval(t, addr, proto, sc.body, key); got != want {
					t.Errorf("%s\n%s %q\nredis %q", sc.body, what, got, want)
				}
			})
		}
	}
}

// rawEval runs EVAL body 1 key on a new connection to addr (after HELLO
// 3 when proto is 3) and returns the reply's bytes as they came.
func rawEval(t *testing.T, addr string, proto int, body, key string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if proto == 3 {
		if _, err := conn.Write(resp.AppendCommand(nil, []string{"hello", "3"})); err != nil {
			t.Fatal(err)
		}
		if _, err := readRaw(r); err != nil {
			t.Fatalf("HELLO 3: %v", err)
		}
	}
	if _, err := conn.Write(resp.AppendCommand(nil, []string{"eval", body, "1", key})); err != nil {
		t.Fatal(err)
	}
	out, err := readRaw(r)
	if err != nil {
		t.Fatalf("EVAL: %v", err)
	}
	return out
}

// readRaw reads one whole reply, of any RESP2 or RESP3 type, and returns
// its bytes.
func readRaw(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, fmt.Errorf("reply line %q: %v", line, err)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	out := line
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return out, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return out, err
		}
		return out + string(buf), nil
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			e, err := readRaw(r)
			if out += e; err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
