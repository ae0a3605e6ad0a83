package commands

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	// go-redis may keep redialing a backend that a test killed.
	leaktest.VerifyTestMain(m)
}

type fixture struct {
	h     *Handler
	s     *Session
	nodes []*faultnode.Node // in-memory nodes, each of which may be failed
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	return newFixtureWith(t, opts, quorum.DefaultConfig())
}

// newFixtureWith is newFixture over a cluster configured by cfg.
func newFixtureWith(t *testing.T, opts Options, cfg quorum.Config) *fixture {
	t.Helper()
	f := &fixture{}
	var nodes []quorum.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		m := faultnode.Wrap(embedded.New(n))
		f.nodes = append(f.nodes, m)
		nodes = append(nodes, m)
	}
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = New(cl, opts)
	f.s = f.h.NewSession("127.0.0.1:1")
	t.Cleanup(func() { f.h.CloseSession(f.s) })
	return f
}

// do runs one command given as space-separated words and renders its reply.
func (f *fixture) do(words ...string) string {
	var args [][]byte
	for _, w := range words {
		args = append(args, []byte(w))
	}
	var r recorder
	f.h.Exec(f.s, args, &r)
	return r.String()
}

func (f *fixture) lock(t *testing.T, key string) string {
	t.Helper()
	got := f.do("LOCK", key, "10000")
	if !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK %s = %s", key, got)
	}
	return strings.Fields(strings.Trim(got, "[]"))[0][1:]
}

func TestRecorder(t *testing.T) {
	var r recorder
	r.WriteArray(2)
	r.WriteBulkString("a")
	r.WriteArray(0)
	r.WriteMap(1)
	r.WriteBulkString("k")
	r.WriteInt(1)
	if got, want := r.String(), "[$a []] {$k :1}"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{"LOCK", "k"}, "-ERR wrong number of arguments for 'lock' command"},
		{[]string{"lock", "k", "abc"}, "-ERR value is not an integer or out of range"},
		{[]string{"LOCK", "k", "0"}, "-ERR invalid expire time in 'lock' command"},
		{[]string{"LOCK", "k", "-5"}, "-ERR invalid expire time in 'lock' command"},
		{[]string{"LOCK", "k", "+5"}, "-ERR value is not an integer or out of range"},
		{[]string{"LOCK", "k", "60001"}, "-ERR ttl exceeds max-ttl"},
		{[]string{"LOCK", "k", "100", "WAIT"}, "-ERR syntax error"},
		{[]string{"LOCK", "k", "100", "WAIT", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"LOCK", "k", "100", "BOGUS", "1"}, "-ERR syntax error"},
		{[]string{"RENEW", "k", "t"}, "-ERR wrong number of arguments for 'renew' command"},
		{[]string{"RENEW", "k", "t", "0"}, "-ERR invalid expire time in 'renew' command"},
		{[]string{"UNLOCK", "k"}, "-ERR wrong number of arguments for 'unlock' command"},
		{[]string{"SET", "k", "v", "NX", "XX", "PX", "100"}, "-ERR syntax error"},
		{[]string{"SET", "k", "v", "NX", "PX", "abc"}, "-ERR value is not an integer or out of range"},
		{[]string{"SET", "k", "v", "NX", "PX", "0"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "NX", "EX", "-1"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "NX", "PX", "100", "EX", "1"}, "-ERR syntax error"},
		{[]string{"SET", "k", "v", "NX", "PX"}, "-ERR syntax error"},
		{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command"},
		{[]string{"FOO", "bar"}, "-ERR unknown command 'FOO', with args beginning with: 'bar' "},
		{[]string{"EVALSHA", "0000000000000000000000000000000000000000", "1", "k", "t"}, "-NOSCRIPT No matching script. Please use EVAL."},
		{[]string{"EVAL_RO", "return redis.call('del', KEYS[1])", "1", "k"}, "-" + msgROScript},
		{[]string{"EVAL", cadScript, "x", "k"}, "-ERR value is not an integer or out of range"},
		{[]string{"EVAL", cadScript, "3", "k"}, "-ERR Number of keys can't be greater than number of args"},
		{[]string{"EVAL", cadScript, "-1", "k"}, "-ERR Number of keys can't be negative"},
		{[]string{"SELECT", "16"}, "-ERR DB index is out of range"},
		{[]string{"SELECT", "-1"}, "-ERR DB index is out of range"},
		{[]string{"SELECT", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"HELLO", "4"}, "-NOPROTO unsupported protocol version"},
		{[]string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command"},
	}
	for _, tt := range tests {
		if got := f.do(tt.cmd...); got != tt.want {
			t.Errorf("%v = %q, want %q", tt.cmd, got, tt.want)
		}
	}
	if got := f.do("PING"); got != "+PONG" {
		t.Fatalf("session unusable after errors: PING = %q", got)
	}
}

const cadScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func TestLockCycle(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.lock(t, "k")
	if len(tok) != 32 {
		t.Fatalf("token %q is not 128 bits of hex", tok)
	}
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"LOCK", "k", "1000"}, "nil"},
		{[]string{"SET", "k", "other", "NX", "PX", "1000"}, "nil"},
		{[]string{"GET", "k"}, "$" + tok},
		{[]string{"UNLOCK", "k", "wrong"}, ":0"},
		{[]string{"RENEW", "k", "wrong", "1000"}, "nil"},
		{[]string{"UNLOCK", "k", tok}, ":1"},
		{[]string{"GET", "k"}, "nil"},
		{[]string{"PTTL", "k"}, ":-2"},
		{[]string{"SET", "k", "mine", "PX", "5000", "NX"}, "+OK"},
		{[]string{"GET", "k"}, "$mine"},
		{[]string{"EVAL", cadScript, "1", "k", "mine"}, ":1"},
		{[]string{"SET", "k", "t2", "NX", "EX", "5"}, "+OK"},
		{[]string{"EVALSHA", sha1Hex(cadScript), "1", "k", "nope"}, ":0"},
		{[]string{"SCRIPT", "LOAD", cadScript}, "$" + sha1Hex(cadScript)},
		{[]string{"SCRIPT", "EXISTS", sha1Hex(cadScript), "abc"}, "[:1 :0]"},
		{[]string{"DEL", "k", "absent"}, ":1"},
		{[]string{"LOCK", "k", "1000", "TOKEN", "abc"}, "[$abc :"},
	}
	for _, st := range steps {
		if got := f.do(st.cmd...); !strings.HasPrefix(got, st.want) {
			t.Errorf("%v = %q, want %q", st.cmd, got, st.want)
		}
	}
}

func TestRenewAndPTTL(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.lock(t, "k")
	got := f.do("RENEW", "k", tok, "20000")
	n := parseReplyInt(t, got)
	if n <= 10000 || n > 20000 {
		t.Fatalf("RENEW validity %d not in (10000, 20000]", n)
	}
	if p := parseReplyInt(t, f.do("PTTL", "k")); p <= 10000 || p > 20000 {
		t.Fatalf("PTTL %d not in (10000, 20000]", p)
	}
}

func parseReplyInt(t *testing.T, s string) int64 {
	t.Helper()
	n, ok := parseInt(strings.TrimPrefix(s, ":"))
	if !strings.HasPrefix(s, ":") || !ok {
		t.Fatalf("not an integer reply: %q", s)
	}
	return n
}

func TestNoQuorumError(t *testing.T) {
	f := newFixture(t, Options{})
	f.nodes[0].SetFault(errors.New("connection refused"))
	f.nodes[1].SetFault(errors.New("connection refused"))
	got := f.do("LOCK", "k", "1000")
	if !strings.HasPrefix(got, "-NOQUORUM 1 of 3 backends answered: ") || !strings.Contains(got, "m1: connection refused") {
		t.Fatalf("LOCK with 2 of 3 nodes down = %q", got)
	}
	f.nodes[1].SetFault(nil)
	if got := f.do("LOCK", "k", "1000"); !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK with 2 of 3 nodes up = %q", got)
	}
}

func TestWaitGivesUp(t *testing.T) {
	f := newFixture(t, Options{})
	f.lock(t, "k")
	start := time.Now()
	if got := f.do("LOCK", "k", "1000", "WAIT", "100"); got != "nil" {
		t.Fatalf("LOCK WAIT on a held key = %q", got)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatalf("LOCK WAIT 100 returned before waiting")
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t, Options{Password: "s3cret"})
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"PING"}, "-NOAUTH Authentication required."},
		{[]string{"LOCK", "k", "100"}, "-NOAUTH Authentication required."},
		{[]string{"AUTH", "bad"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "bob", "s3cret"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"HELLO", "3"}, "-NOAUTH HELLO must be called"},
		{[]string{"AUTH", "default", "s3cret"}, "+OK"},
		{[]string{"PING"}, "+PONG"},
		{[]string{"RESET"}, "+RESET"},
		{[]string{"PING"}, "-NOAUTH"},
		{[]string{"HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "me"}, "{$server $redis $version $7.2.0 $proto :3"},
		{[]string{"CLIENT", "GETNAME"}, "$me"},
	}
	for _, st := range steps {
		if got := f.do(st.cmd...); !strings.HasPrefix(got, st.want) {
			t.Errorf("%v = %q, want prefix %q", st.cmd, got, st.want)
		}
	}
	if f.s.Proto() != 3 {
		t.Fatalf("proto after HELLO 3 = %d", f.s.Proto())
	}
}

func TestConnectionCommands(t *testing.T) {
	f := newFixture(t, Options{})
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"PING", "hi"}, "$hi"},
		{[]string{"ECHO", "x"}, "$x"},
		{[]string{"SELECT", "0"}, "+OK"},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured"},
		{[]string{"CLIENT", "SETNAME", "a b"}, "-" + msgBadName},
		{[]string{"CLIENT", "SETNAME", "worker-1"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis"}, "+OK"},
		{[]string{"CLIENT", "ID"}, ":"},
		{[]string{"CLIENT", "INFO"}, "=id="},
		{[]string{"CLIENT", "BOGUS"}, "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP."},
		{[]string{"CONFIG", "GET", "save"}, "{$save $}"},
		{[]string{"CONFIG", "GET", "appendonly"}, "{$appendonly $no}"},
		{[]string{"CONFIG", "GET", "nothing"}, "{}"},
		{[]string{"COMMAND", "COUNT"}, ":"},
		{[]string{"COMMAND", "DOCS"}, "{}"},
		{[]string{"COMMAND", "INFO", "lock"}, "[[$lock :-3 ~[+write] :1 :1 :1"},
		{[]string{"INFO"}, "=# Server\r\nredis_version:7.2.0"},
		{[]string{"INFO", "backends"}, "=# Backends\r\nbackends:3\r\nquorum:2"},
		{[]string{"HELLO"}, "{$server $redis $version $7.2.0 $proto :2"},
		{[]string{"QUIT"}, "+OK"},
	}
	for _, st := range steps {
		if got := f.do(st.cmd...); !strings.HasPrefix(got, st.want) {
			t.Errorf("%v = %q, want prefix %q", st.cmd, got, st.want)
		}
	}
	if !f.s.Quit() {
		t.Fatal("QUIT did not mark the session for closing")
	}
}
