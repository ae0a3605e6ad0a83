package commands

import (
	"math"
	"slices"
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

func isWait(a []byte) bool { return asciiEqualFold(a, "WAIT") }

// lockWaits reports whether LOCK key ttl [options] has a WAIT option with a
// positive time, reading the options with parseLock's own scanner. Options
// that fail to parse make the command fail before it could wait. The ttl
// and max-wait are not checked: their limits are the Handler's, and a LOCK
// refused for either answers at once either way.
func lockWaits(args [][]byte) bool {
	// Every LOCK comes here (the proxy asks before each batch): one
	// without the word WAIT is answered without scanning its options.
	if len(args) < 3 || !slices.ContainsFunc(args[3:], isWait) {
		return false
	}
	o, bad := scanLockOptions(args[3:], math.MaxInt64)
	// TOKEN and OWNER exclude each other.
	return bad == "" && o.wait > 0 && (o.token == nil || o.owner == nil)
}

// HoldWrites holds the backends' writes until ReleaseWrites, while the
// commands of a pipelined batch are started (Start): their rounds then
// reach each backend in one write. Nothing between the two may wait for
// a backend.
func (h *Handler) HoldWrites() { h.cluster.HoldWrites() }

// ReleaseWrites writes what the commands started since HoldWrites asked.
func (h *Handler) ReleaseWrites() { h.cluster.ReleaseWrites() }
