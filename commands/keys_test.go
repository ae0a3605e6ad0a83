package commands

import (
	"strings"
	"testing"
)

func TestKeyCommands(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{[]string{"TTL", "k"}, ":-2"},
		{[]string{"EXISTS", "k"}, ":0"},
		{[]string{"PEXPIRE", "k", "1000"}, ":0"},
		{[]string{"SET", "k", "t", "NX", "EX", "10"}, "+OK"},
		{[]string{"TTL", "k"}, ":10"},
		{[]string{"EXISTS", "k", "k", "nope"}, ":2"},
		{[]string{"EXPIRE", "k", "30"}, ":1"},
		{[]string{"TTL", "k"}, ":30"},
		{[]string{"PEXPIRE", "k", "20000"}, ":1"},
		{[]string{"TTL", "k"}, ":20"},
		{[]string{"PEXPIRE", "k", "0"}, ":1"},
		{[]string{"EXISTS", "k"}, ":0"},
		{[]string{"PEXPIRE", "k", "-5"}, ":0"},
		{[]string{"TTL"}, "-ERR wrong number of arguments for 'ttl' command"},
		{[]string{"EXISTS"}, "-ERR wrong number of arguments for 'exists' command"},
		{[]string{"PEXPIRE", "k"}, "-ERR wrong number of arguments for 'pexpire' command"},
		{[]string{"EXPIRE", "k", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"EXPIRE", "k", "61"}, "-ERR ttl exceeds max-ttl"},
		{[]string{"EXPIRE", "k", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command"},
		{[]string{"PEXPIRE", "k", "100", "GT"}, "-ERR redlockd does not support this form of 'pexpire': GT"},
		{[]string{"PEXPIRE", "k", "100", "bogus"}, "-ERR Unsupported option bogus"},
	})
}

func TestNativeCompareAndSet(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{[]string{"SET", "k", "t", "XX", "PX", "5000", "IFEQ", "t"}, "nil"},
		{[]string{"SET", "k", "t", "NX", "PX", "1000"}, "+OK"},
		{[]string{"SET", "k", "t", "XX", "PX", "20000", "IFEQ", "t"}, "+OK"},
		{[]string{"SET", "k", "t", "IFEQ", "t", "EX", "30"}, "+OK"},
		{[]string{"TTL", "k"}, ":30"},
		{[]string{"SET", "k", "u", "PX", "5000", "IFEQ", "u"}, "nil"},
		{[]string{"GET", "k"}, "$t"},
		{[]string{"SET", "k", "u", "PX", "5000", "IFEQ", "t"}, "+OK"},
		{[]string{"GET", "k"}, "$u"},
		{[]string{"SET", "k", "t", "PX", "30000", "IFEQ", "u"}, "+OK"},
		{[]string{"SET", "k", "t", "IFEQ", "t"}, "-ERR redlockd does not support this form of 'set': IFEQ needs an expiry"},
		{[]string{"SET", "k", "t", "NX", "IFEQ", "t", "PX", "10"}, "-ERR syntax error"},
		{[]string{"SET", "k", "t", "IFEQ", "t", "NX", "PX", "10"}, "-ERR syntax error"},
		{[]string{"SET", "k", "t", "PX", "10", "IFEQ"}, "-ERR syntax error"},
		{[]string{"DELIFEQ", "k", "u"}, ":0"},
		{[]string{"DELEX", "k", "IFEQ", "u"}, ":0"},
		{[]string{"DELEX", "k", "IFEQ", "t"}, ":1"},
		{[]string{"DELIFEQ", "k", "t"}, ":0"},
		{[]string{"SET", "k", "t", "NX", "PX", "1000"}, "+OK"},
		{[]string{"DELIFEQ", "k", "t"}, ":1"},
		{[]string{"DELIFEQ", "k"}, "-ERR wrong number of arguments for 'delifeq' command"},
		{[]string{"DELEX", "k", "IFEQ"}, "-ERR syntax error"},
		{[]string{"DELEX", "k", "IFNE", "t"}, "-ERR redlockd does not support this form of 'delex'"},
		{[]string{"SET", "k", "t", "NX", "PX", "1000"}, "+OK"},
		{[]string{"DELEX", "k"}, ":1"},
	})
}

func TestForceSet(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.lock(t, "k")
	runSteps(t, f, []step{
		{[]string{"SET", "k", "taker", "PX", "5000"}, "+OK"},
		{[]string{"GET", "k"}, "$taker"},
		{[]string{"UNLOCK", "k", tok}, ":0"},
		{[]string{"SET", "k", "again", "EX", "20"}, "+OK"},
		{[]string{"TTL", "k"}, ":20"},
		{[]string{"SET", "k", "v", "PX", "0"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "PX", "60001"}, "-ERR ttl exceeds max-ttl"},
		// Past a Go duration but within Redis's clock: max-ttl's error.
		{[]string{"SET", "k", "v", "NX", "PX", "450359962737049"}, "-ERR ttl exceeds max-ttl"},
		{[]string{"SET", "k", "v", "NX", "EX", "450359962737"}, "-ERR ttl exceeds max-ttl"},
		{[]string{"SET", "k", "v", "NX", "PX", "9223372036854775807"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "NX", "EX", "9223372036854775"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"PEXPIRE", "k", "450359962737049"}, "-ERR ttl exceeds max-ttl"},
		{[]string{"PEXPIRE", "k", "9223372036854775807"}, "-ERR invalid expire time in 'pexpire' command"},
	})
	// Without an expiry it is a session lock, not a force SET.
	if got := f.do("SET", "k2", "v"); strings.HasPrefix(got, "+OK") && f.do("PTTL", "k2") != ":-1" {
		t.Fatalf("SET k2 v without expiry = %q but PTTL is not -1", got)
	}
}
