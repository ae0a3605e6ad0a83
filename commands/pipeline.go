package commands

import "strings"

// How the proxy may run the commands of one pipelined batch. Lock commands
// on different keys do not see each other, so they can run at once; a
// command that reads or changes the connection's state (protocol, login,
// name, QUIT) must see everything before it done and nothing after it
// started. Commands on the same key keep their order too, as a client that
// pipelines LOCK and UNLOCK of one key expects.

// concurrent lists the commands that may run alongside others; where their
// keys are comes from the command table. Anything not here is a barrier, so
// a command added later is safe until someone decides otherwise.
var concurrent = map[string]bool{
	"set": true, "lock": true, "renew": true, "unlock": true,
	"get": true, "pttl": true, "ttl": true,
	"pexpire": true, "expire": true,
	"delex": true, "delifeq": true, "lockinfo": true,
	"del": true, "exists": true,
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true,
	"ping": true, "echo": true,
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
	cmd, ok := lookup(args[0])
	if !ok || !concurrent[cmd.name] {
		return nil, false
	}
	keys, ok := keyArgs(cmd.keys, args)
	if !ok {
		// Where numkeys is not usable every argument counts, which can
		// only make the batch more sequential.
		return args[1:], true
	}
	return keys, true
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
