package commands

import (
	"strconv"
	"strings"
)

// How the proxy may run the commands of one pipelined batch. Lock commands
// on different keys do not see each other, so they can run at once; a
// command that reads or changes the connection's state (protocol, login,
// name, QUIT) must see everything before it done and nothing after it
// started. Commands on the same key keep their order too, as a client that
// pipelines LOCK and UNLOCK of one key expects.

// keyLayout says where a concurrent command's keys are.
type keyLayout int

const (
	keyFirst keyLayout = iota // args[1]
	keysAll                   // args[1:]
	keysEval                  // args[3 : 3+numkeys]
	keysNone                  // touches no key and no session state
)

// concurrent lists the commands that may run alongside others. Anything not
// here is a barrier, so a command added later is safe until someone
// decides otherwise.
var concurrent = map[string]keyLayout{
	"set": keyFirst, "lock": keyFirst, "renew": keyFirst, "unlock": keyFirst,
	"get": keyFirst, "pttl": keyFirst, "ttl": keyFirst,
	"pexpire": keyFirst, "expire": keyFirst,
	"delex": keyFirst, "delifeq": keyFirst, "lockinfo": keyFirst,
	"del": keysAll, "exists": keysAll,
	"eval": keysEval, "evalsha": keysEval, "eval_ro": keysEval, "evalsha_ro": keysEval,
	"ping": keysNone, "echo": keysNone,
}

// PipelineKeys returns the keys a concurrent command touches, as slices of
// args; two commands that share a key must not run at once. For a barrier
// it returns nil, false: a barrier runs alone within a pipelined batch,
// after every command before it has finished and before any command after
// it starts. Connection commands (AUTH, HELLO, SELECT, RESET, QUIT,
// CLIENT …) and unknown commands are barriers.
func PipelineKeys(args [][]byte) ([][]byte, bool) {
	if len(args) == 0 {
		return nil, false
	}
	layout, ok := lookupFold(concurrent, args[0])
	if !ok {
		return nil, false
	}
	switch layout {
	case keyFirst:
		return args[1:min(2, len(args))], true
	case keysAll:
		return args[1:], true
	case keysEval:
		return evalKeys(args), true
	}
	return nil, true
}

// evalKeys is EVAL's key list; when numkeys is not usable every argument
// counts, which can only make the batch more sequential.
func evalKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return args[1:]
	}
	n, err := strconv.Atoi(string(args[2]))
	if err != nil || n < 0 || 3+n > len(args) {
		return args[1:]
	}
	return args[3 : 3+n]
}

// MayBlock reports whether a command can wait for long (LOCK … WAIT): the
// proxy keeps such commands out of its limit on commands in flight, so
// that waiters can never hold back the UNLOCK they are waiting for.
func MayBlock(args [][]byte) bool {
	if len(args) < 4 || !strings.EqualFold(string(args[0]), "lock") {
		return false
	}
	for _, a := range args[3:] {
		if strings.EqualFold(string(a), "wait") {
			return true
		}
	}
	return false
}
