package commands

import (
	"strings"
	"testing"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// With a majority of real backends gone, the lock commands and a library's
// script answer NOQUORUM and count as "no_quorum"; other error replies
// still count as "error".
func TestObserverNoQuorumOutcome(t *testing.T) {
	servers := redistest.StartN(t, 3)
	rec := &cmdRecorder{}
	f := client(t, redisHandler(t, servers, Options{Observer: rec}))
	servers[0].Kill()
	servers[1].Kill()
	cmds := [][]string{
		{"LOCK", "k", "1000"},
		{"EVALSHA", sha1Hex(redsyncDelete), "1", "k", "t"},
		{"LOCK", "k", "abc"},
	}
	for i, cmd := range cmds {
		got := f.do(cmd...)
		if wantNQ := i < 2; strings.HasPrefix(got, "-NOQUORUM ") != wantNQ {
			t.Errorf("%v = %s; NOQUORUM expected: %v", cmd, got, wantNQ)
		}
	}
	want := "lock/no_quorum evalsha/no_quorum lock/error"
	if got := strings.Join(rec.got, " "); got != want {
		t.Errorf("outcomes = %s, want %s", got, want)
	}
}
