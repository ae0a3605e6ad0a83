package commands

import (
	"testing"

	"github.com/redlockd/redlockd/commands/scriptcheck"
)

// TestBuiltinScriptsPassTheCheck: every library body that redlockd
// recognises is one the static check admits too, so replicating it
// instead of recognising it refuses none of them.
func TestBuiltinScriptsPassTheCheck(t *testing.T) {
	if len(scripts) == 0 {
		t.Fatal("no built-in scripts")
	}
	for sha, s := range scripts {
		if _, err := scriptcheck.Check(s.body); err != nil {
			t.Errorf("%s (%s): %v", s.origin, sha, err)
		}
	}
}
