package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// compareOneLine runs each command on redis and through the table, in
// order, and wants the same one-line reply.
func compareOneLine(t *testing.T, real *resptest.Conn, f *fixture, cmds [][]string) {
	t.Helper()
	for _, cmd := range cmds {
		want, got := real.Line(cmd...), f.do(cmd...)
		if got != want {
			t.Errorf("%.60q:\nredis: %q\nproxy: %q", cmd, want, got)
		}
	}
}

// TestRepliesMatchRedis covers the texts a client may parse: the unknown
// command error with its argument excerpt, subcommand arity and options,
// AUTH against Redis's nopass default user, and EVAL's numkeys checks
// (which Redis makes before it looks at the script).
func TestRepliesMatchRedis(t *testing.T) {
	real := resptest.Dial(t, redistest.Start(t).Addr())
	f := newFixture(t, Options{})
	long := strings.Repeat("x", 100)
	many := []string{"FOO"}
	for i := range 40 {
		many = append(many, fmt.Sprint(i%10))
	}
	compareOneLine(t, real, f, [][]string{
		{"FOO", long, long, long},
		{"FOO", strings.Repeat("y", 200)},
		many,
		{strings.Repeat("n", 200), "a"},
		{"FOO"},
		{"COMMAND", "COUNT", "x"},
		{"SCRIPT", "FLUSH", "x"},
		{"SCRIPT", "FLUSH", "async"},
		{"SCRIPT", "FLUSH", "SYNC"},
		{"SCRIPT", "FLUSH", "SYNC", "x"},
		{"SCRIPT", "FLUSH"},
		{"AUTH", "x"},
		{"AUTH", "bob", "x"},
		{"AUTH", "default", "x"},
		{"EVAL", "return 1", "-1"},
		{"EVAL", "return 1", "5"},
		{"EVAL", "return 1", "x"},
		{"EVALSHA", "0000000000000000000000000000000000000000", "5"},
		{"EVALSHA", "0000000000000000000000000000000000000000", "-1"},
	})
}

// TestHelloAuthDefaultUserWithoutPassword: without --requirepass, HELLO …
// AUTH default <anything> succeeds, as on a Redis whose default user has
// no password (go-redis sends it when its client has a password set).
func TestHelloAuthDefaultUserWithoutPassword(t *testing.T) {
	real := resptest.Dial(t, redistest.Start(t).Addr())
	f := newFixture(t, Options{})
	if l := real.Line("HELLO", "2", "AUTH", "default", "x"); l != "*14" {
		t.Fatalf("redis: HELLO 2 AUTH default x = %q", l)
	}
	if got := f.do("HELLO", "2", "AUTH", "default", "x"); !strings.HasPrefix(got, "{$server $redis") {
		t.Fatalf("HELLO 2 AUTH default x = %q", got)
	}
	if got := f.do("HELLO", "2", "AUTH", "bob", "x"); got != "-"+msgWrongPass {
		t.Fatalf("HELLO 2 AUTH bob x = %q", got)
	}
}

// TestArityBeforeAuthMatchesRedis: Redis answers a malformed command with
// the arity error even before AUTH, and a well-formed one with NOAUTH.
func TestArityBeforeAuthMatchesRedis(t *testing.T) {
	real := resptest.Dial(t, redistest.Start(t, "--requirepass", "pw").Addr())
	f := newFixture(t, Options{Password: "pw"})
	compareOneLine(t, real, f, [][]string{
		{"GET"},
		{"SET", "k"},
		{"PTTL", "a", "b"},
		{"GET", "k"},
		{"FOO", "x"},
		{"AUTH", "default", "pw"},
		{"GET"},
	})
}
