package commands

import (
	"strings"
	"testing"
)

func runLines(t *testing.T, f *fixture, steps [][2]string) {
	t.Helper()
	for _, step := range steps {
		if got := f.do(strings.Fields(step[0])...); got != step[1] {
			t.Fatalf("%s = %q, want %q", step[0], got, step[1])
		}
	}
}

// TestTransactionRefusals: what a transaction may not hold is refused as
// it is queued (pub/sub, whose replies EXEC's array could not count; a
// queue past its bound) or at EXEC (a writing transaction of a command
// with no script form), and nothing is run.
func TestTransactionRefusals(t *testing.T) {
	f := newFixture(t, Options{})
	runLines(t, f, [][2]string{
		{"MULTI", "+OK"},
		{"SUBSCRIBE ch", "-ERR redlockd does not support this form of 'subscribe': inside MULTI"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
		{"MULTI", "+OK"},
		{"SET k tok NX PX 10000", "+QUEUED"},
		{"LOCK other 10000", "+QUEUED"},
		{"EXEC", "-ERR redlockd does not support this form of 'exec': a transaction that writes may hold only GET, SET, DEL, EXISTS, PTTL, TTL, PEXPIRE and EXPIRE; 'lock' is not one"},
		{"GET k", "nil"},
		{"GET other", "nil"},
	})
	runLines(t, f, [][2]string{{"MULTI", "+OK"}})
	for range maxQueued {
		if got := f.do("GET", "k"); got != "+QUEUED" {
			t.Fatalf("GET k in MULTI = %q", got)
		}
	}
	runLines(t, f, [][2]string{
		{"GET k", "-" + msgTxnTooLarge},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
	})
}

// TestTransactionWritesLikeAScript: a writing transaction is one
// replicated script, so a script's rules apply (a key it leaves without
// an expiry gets the session ttl, as a script's does) and its reply is
// the script's array.
func TestTransactionWritesLikeAScript(t *testing.T) {
	f := newFixture(t, Options{})
	runLines(t, f, [][2]string{
		{"MULTI", "+OK"},
		{"SET k tok NX PX 10000", "+QUEUED"},
		{"SET k other NX PX 10000", "+QUEUED"},
		{"GET k", "+QUEUED"},
		{"EXEC", "[+OK nil $tok]"},
		{"GET k", "$tok"},
		{"MULTI", "+OK"},
		{"DEL k", "+QUEUED"},
		{"EXISTS k", "+QUEUED"},
		{"EXEC", "[:1 :0]"},
	})
	runLines(t, f, [][2]string{
		{"MULTI", "+OK"},
		{"SET k tok", "+QUEUED"},
		{"EXEC", "[+OK]"},
	})
	if got := f.do("PTTL", "k"); !strings.HasPrefix(got, ":") || got == ":-1" || got == ":-2" {
		t.Fatalf("PTTL of a key a transaction set without expiry = %q, want the session ttl", got)
	}
}
