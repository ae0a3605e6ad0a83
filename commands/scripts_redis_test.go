package commands

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestScriptRepliesMatchRedis runs each library's script on a real
// redis-server and the same call through the command table, after the same
// setup, and compares the replies: with every node agreeing, the quorum's
// answer must be the one the library gets from a single Redis.
func TestScriptRepliesMatchRedis(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	held := []string{"SET", "k", "t", "PX", "10000"}
	session := []string{"SET", "k", "t"}
	at := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10) // a PXAT deadline
	cases := []struct {
		name  string
		setup []string // run on both, nil for none
		body  string
		keys  []string
		args  []string
	}{
		{"redsync delete absent", nil, redsyncDelete, k1("k"), []string{"t"}},
		{"redsync delete other", held, redsyncDelete, k1("k"), []string{"x"}},
		{"redsync delete own", held, redsyncDelete, k1("k"), []string{"t"}},
		{"redsync touch own", held, redsyncTouch, k1("k"), []string{"t", "5000"}},
		{"redsync touch other", held, redsyncTouch, k1("k"), []string{"x", "5000"}},
		{"redsync touch-or-setnx absent", nil, redsyncTouchOrSetNX, k1("k"), []string{"t", "5000"}},
		{"redsync touch-or-setnx other", held, redsyncTouchOrSetNX, k1("k"), []string{"x", "5000"}},
		{"redis-py release own", held, redisPyRelease, k1("k"), []string{"t"}},
		{"redis-py release other", held, redisPyRelease, k1("k"), []string{"x"}},
		{"redis-py extend add", held, redisPyExtend, k1("k"), []string{"t", "1000", "0"}},
		{"redis-py extend replace", held, redisPyExtend, k1("k"), []string{"t", "1000", "1"}},
		{"redis-py extend absent", nil, redisPyExtend, k1("k"), []string{"t", "1000", "0"}},
		{"redis-py reacquire own", held, redisPyReacquire, k1("k"), []string{"t", "1000"}},
		{"redis-py reacquire other", held, redisPyReacquire, k1("k"), []string{"x", "1000"}},
		{"pottery acquired other", held, potteryAcquired, k1("k"), []string{"x"}},
		{"pottery extend own", held, potteryExtend, k1("k"), []string{"t", "1000"}},
		{"pottery release own", held, potteryRelease, k1("k"), []string{"t"}},
		{"pottery release absent", nil, potteryRelease, k1("k"), []string{"t"}},
		{"redlock v4 acquire free", nil, redlockAcquireV41, []string{"a", "b"}, []string{"t", "1000"}},
		{"redlock v4 acquire held", held, redlockAcquireV41, []string{"a", "k"}, []string{"t", "1000"}},
		{"redlock v5 acquire free", nil, redlockAcquireV5, []string{"a", "b"}, []string{"t", "1000"}},
		{"redlock v5 acquire held", held, redlockAcquireV5, []string{"k", "b"}, []string{"u", "1000"}},
		{"redlock v5 extend own", held, redlockExtendV5, k1("k"), []string{"t", "1000"}},
		{"redlock v5 extend partly", held, redlockExtendV5, []string{"k", "b"}, []string{"t", "1000"}},
		{"redlock v5 release partly", held, redlockReleaseV5, []string{"k", "b"}, []string{"t"}},
		{"redlock v4.0 release own", held, redlockReleaseV40, k1("k"), []string{"t"}},
		{"redlock v4.2 extend other", held, redlockExtendV42, k1("k"), []string{"x", "1000"}},
		{"redlock v4.0 acquire free", nil, redlockAcquireV40, []string{"a", "b", "c"}, []string{"t", "1000"}},
		{"bsm refresh own", held, bsmRefresh, k1("k"), []string{"t", "5000"}},
		{"bsm refresh other", held, bsmRefresh, k1("k"), []string{"x", "5000"}},
		{"bsm refresh absent", nil, bsmRefresh, k1("k"), []string{"t", "5000"}},
		{"bsm release own", held, bsmRelease, k1("k"), []string{"t"}},
		{"bsm release other", held, bsmRelease, k1("k"), []string{"x"}},
		{"bsm release absent", nil, bsmRelease, k1("k"), []string{"t"}},
		{"bsm ttl other", held, bsmPTTL, k1("k"), []string{"x"}},
		{"bsm ttl absent", nil, bsmPTTL, k1("k"), []string{"t"}},
		// SET without an expiry is a session lock through redlockd and a
		// key without one on Redis: the ttl scripts answer alike.
		{"bsm ttl own, no expiry", session, bsmPTTL, k1("k"), []string{"t"}},
		{"pottery acquired own, no expiry", session, potteryAcquired, k1("k"), []string{"t"}},
		{"rueidislock acquire free", nil, rueidisAcquireAt, k1("k"), []string{"t", at}},
		{"rueidislock acquire held", held, rueidisAcquireAt, k1("k"), []string{"x", at}},
		{"rueidislock acquire px free", nil, rueidisAcquirePX, k1("k"), []string{"t", "5000"}},
		{"rueidislock acquire px held", held, rueidisAcquirePX, k1("k"), []string{"x", "5000"}},
		{"rueidislock force held", held, rueidisForceAt, k1("k"), []string{"x", at}},
		{"rueidislock force px free", nil, rueidisForcePX, k1("k"), []string{"t", "5000"}},
		{"rueidislock extend own", held, rueidisExtend, k1("k"), []string{"t", at}},
		{"rueidislock extend other", held, rueidisExtend, k1("k"), []string{"x", at}},
		{"rueidislock extend absent", nil, rueidisExtend, k1("k"), []string{"t", at}},
		{"rueidislock extend own past", held, rueidisExtend, k1("k"), []string{"t", "1000"}},
		{"rueidislock release own", held, rueidisRelease, k1("k"), []string{"t", at}},
		{"rueidislock release other", held, rueidisRelease, k1("k"), []string{"x", at}},
		{"rueidislock release absent", nil, rueidisRelease, k1("k"), []string{"t", at}},
	}
	// Replies are read off the wire: an acquire answers the status OK,
	// which go-redis would not tell from a bulk string.
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReader(nc)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := rc.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, Options{})
			if tc.setup != nil {
				if err := rc.Do(t.Context(), anys(tc.setup)...).Err(); err != nil {
					t.Fatal(err)
				}
				if got := f.do(tc.setup...); got != "+OK" {
					t.Fatalf("setup %v = %s", tc.setup, got)
				}
			}
			want := rawReply(t, nc, rd, eval(tc.body, tc.keys, tc.args...))
			if got := f.do(evalsha(tc.body, tc.keys, tc.args...)...); got != want {
				t.Fatalf("proxy %s, redis %s", got, want)
			}
		})
	}
}

// rawReply sends cmd and reads a one-line reply (status, error, integer
// or null), written as the fixture writes it.
func rawReply(t *testing.T, nc net.Conn, rd *bufio.Reader, cmd []string) string {
	t.Helper()
	if _, err := nc.Write(resp.AppendCommand(nil, cmd)); err != nil {
		t.Fatal(err)
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "$-1" {
		return "nil"
	}
	if line[0] == '$' {
		t.Fatalf("a bulk reply %q: rawReply reads one-line replies only", line)
	}
	return line
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
