package commands

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// hashLockScript writes a hash with a ttl, as Redisson's reentrant lock
// does: a script the check admits.
const hashLockScript = `redis.call("hset",KEYS[1],"f","v") return redis.call("pexpire",KEYS[1],60000)`

const msgWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value"

// TestKeyOfAnotherType: a key that a script made a hash on every node
// is answered as redis-server answers it (EXISTS 1, its PTTL and TTL, GET's
// WRONGTYPE), never NOQUORUM, since every node answered; the lock commands
// answer as for a lock held by another (null) or a token that holds
// nothing (0), and change nothing.
func TestKeyOfAnotherType(t *testing.T) {
	f := newFixture(t, Options{})
	if got := f.do("EVAL", hashLockScript, "1", "hx"); got != ":1" {
		t.Fatalf("EVAL = %s", got)
	}
	checkPTTL := func(name, got string, max int64) {
		t.Helper()
		n, err := strconv.ParseInt(strings.TrimPrefix(got, ":"), 10, 64)
		if err != nil || n <= 0 || n > max {
			t.Fatalf("%s hx = %s, want in (0, %d]", name, got, max)
		}
	}
	checkPTTL("PTTL", f.do("PTTL", "hx"), 60000)
	checkPTTL("TTL", f.do("TTL", "hx"), 60)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"EXISTS", "hx"}, ":1"},
		{[]string{"EXISTS", "hx", "nope", "hx"}, ":2"},
		{[]string{"GET", "hx"}, msgWrongType},
		{[]string{"UNLOCK", "hx", "t"}, ":0"},
		{[]string{"RENEW", "hx", "t", "1000"}, "nil"},
		{[]string{"DELIFEQ", "hx", "t"}, ":0"},
		{[]string{"DELEX", "hx", "IFEQ", "t"}, ":0"},
		{[]string{"EVAL", cadScript, "1", "hx", "t"}, ":0"},
		{[]string{"SET", "hx", "t", "XX", "PX", "1000", "IFEQ", "t"}, "nil"},
		{[]string{"SET", "hx", "n", "PX", "1000", "IFEQ", "t"}, "nil"},
		{[]string{"LOCK", "hx", "1000"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "FENCE"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "SHARED"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "PERMITS", "2"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "OWNER", "o"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "WAIT", "50", "FAIR"}, "nil"},
		{[]string{"LOCK", "hx", "1000", "WAIT", "50", "SHARED"}, "nil"},
		{[]string{"SET", "hx", "v", "NX", "PX", "1000"}, "nil"},
	} {
		if got := f.do(tc.cmd...); got != tc.want {
			t.Errorf("%v = %s, want %s", tc.cmd, got, tc.want)
		}
	}
	// Nothing above changed the hash on any node.
	if got := f.do("EVAL", `return redis.call("hget",KEYS[1],"f")`, "1", "hx"); got != "$v" {
		t.Fatalf("HGET after the lock commands = %s, want $v", got)
	}
	checkPTTL("PTTL after the lock commands", f.do("PTTL", "hx"), 60000)
	// LOCKINFO: every backend answered, none holds a lock.
	if got := f.do("LOCKINFO", "hx"); !strings.Contains(got, "$verdict $not held") || !strings.Contains(got, "$answered :3") {
		t.Fatalf("LOCKINFO hx = %s", got)
	}
	if got := f.do("DEL", "hx"); got != ":1" {
		t.Fatalf("DEL hx = %s", got)
	}
	if got := f.do("EXISTS", "hx"); got != ":0" {
		t.Fatalf("EXISTS after DEL = %s", got)
	}
}

// TestKeyOfAnotherTypeQuorum: the error reply counts as an answer, not as
// a vote: with a node down the two left still answer WRONGTYPE; with two
// down, too few answered (NOQUORUM, as for any key).
func TestKeyOfAnotherTypeQuorum(t *testing.T) {
	f := newFixture(t, Options{})
	if got := f.do("EVAL", hashLockScript, "1", "hx"); got != ":1" {
		t.Fatalf("EVAL = %s", got)
	}
	f.nodes[0].SetFault(errors.New("connection refused"))
	if got := f.do("GET", "hx"); got != msgWrongType {
		t.Fatalf("GET with one node down = %s", got)
	}
	if got := f.do("EXISTS", "hx"); got != ":1" {
		t.Fatalf("EXISTS with one node down = %s", got)
	}
	f.nodes[1].SetFault(errors.New("connection refused"))
	for _, cmd := range [][]string{{"GET", "hx"}, {"EXISTS", "hx"}, {"UNLOCK", "hx", "t"}} {
		if got := f.do(cmd...); !strings.HasPrefix(got, "-NOQUORUM 1 of 3 backends answered") {
			t.Fatalf("%v with two nodes down = %s", cmd, got)
		}
	}
}
