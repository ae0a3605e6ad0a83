package commands

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"time"
)

// How the proxy may run the commands of one pipelined batch. Lock commands
// on different keys do not see each other, so they can run at once; a
// command that reads or changes the connection's state (protocol, login,
// name, QUIT) must see everything before it done and nothing after it
// started. Commands on the same key keep their order too, as a client that
// pipelines LOCK and UNLOCK of one key expects.

// PipelineKeys returns the keys a concurrent command touches, as slices of
// args; two commands that share a key must not run at once. For a barrier
// it returns nil, false: a barrier runs alone within a pipelined batch,
// after every command before it has finished and before any command after
// it starts. Connection commands (AUTH, HELLO, SELECT, RESET, QUIT,
// CLIENT …) and unknown commands are barriers.
func PipelineKeys(args [][]byte) ([][]byte, bool) { return NewRequest(args).Keys() }

// MayBlock reports whether a command can wait for long (LOCK … WAIT): the
// proxy keeps such commands out of its limit on commands in flight, so
// that waiters can never hold back the UNLOCK they are waiting for.
func MayBlock(args [][]byte) bool { return NewRequest(args).MayBlock() }

func isWait(a []byte) bool { return bytes.EqualFold(a, []byte("WAIT")) }

// lockWaits reports whether LOCK key ttl [options] has a WAIT option with a
// positive time, reading the options as parseLock does: WAIT, TOKEN and
// OWNER take a non-empty value, KEEPALIVE and FENCE none, none may repeat,
// TOKEN and OWNER not together.
// Options that fail to parse make the command fail before it could wait.
// The ttl is not checked: its limit is the Handler's, and a LOCK refused
// for its ttl answers at once either way.
func lockWaits(args [][]byte) bool {
	// Every LOCK comes here (the proxy asks before each batch): one
	// without the word WAIT is answered without allocating.
	if !slices.ContainsFunc(args[min(3, len(args)):], isWait) {
		return false
	}
	waits := false
	seen := map[string]bool{}
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		if seen[opt] {
			return false
		}
		seen[opt] = true
		switch opt {
		case "KEEPALIVE", "FENCE":
			continue
		case "WAIT", "TOKEN", "OWNER":
		default:
			return false
		}
		if i++; i >= len(args) || len(args[i]) == 0 {
			return false
		}
		if opt == "WAIT" {
			n, ok := parseInt(string(args[i]))
			if !ok || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
				return false
			}
			waits = n > 0
		}
	}
	// TOKEN and OWNER exclude each other.
	return waits && !(seen["TOKEN"] && seen["OWNER"])
}
