package commands

import (
	"bytes"
	"strconv"

	"github.com/redlockd/redlockd/quorum"
)

// keyLayout says where a command's keys are among its arguments. It is part
// of each command's registration, so that COMMAND's key positions, the
// ordering of pipelined commands and the reserved-namespace check all read
// the same place: a command that names keys says so once.
type keyLayout int

const (
	keysNone keyLayout = iota // names no key
	keyFirst                  // args[1]
	keysAll                   // args[1:]
	keysEval                  // args[3 : 3+numkeys]
)

// msgReservedKey is the refusal of a key in the reserved namespace.
const msgReservedKey = "ERR key is in redlockd's reserved namespace"

// msgReservedValue refuses a lock value in the reserved namespace: the
// nodes write such values themselves (the markers of a key held by readers
// or by a semaphore's permits), and a client's copy would pass for one.
const msgReservedValue = "ERR value is in redlockd's reserved namespace"

// reservedRefusal is the error a command gets for naming the proxy's own
// namespace, or "": a key in it; any argument of a script (EVAL and its
// forms, recognised or replicated, read-only or not), which may name a
// key (a script can build one from ARGV) or stand for a token; or, for
// another command that changes locks, any argument in it (a token, a
// compared value). PUBLISH's message is the client's own text. It is the
// one check: every path of a command (Run, Start) asks it first.
func reservedRefusal(cmd *command, args [][]byte) string {
	if namesReservedKey(cmd.keys, args) {
		return msgReservedKey
	}
	switch {
	case cmd.keys == keysEval:
		if _, ok := evalKeyArgs(args); ok && anyReserved(args[3:]) {
			return msgReservedKey
		}
	case cmd.write && cmd.name != "publish":
		if anyReserved(args[1:]) {
			return msgReservedValue
		}
	}
	return ""
}

func anyReserved(args [][]byte) bool {
	for _, a := range args {
		if bytes.HasPrefix(a, []byte(quorum.ReservedPrefix)) {
			return true
		}
	}
	return false
}

// keyArgs returns the keys that args (the name first) name under layout;
// ok is false when EVAL's numkeys does not say where they are, which the
// command itself refuses.
func keyArgs(layout keyLayout, args [][]byte) (keys [][]byte, ok bool) {
	switch layout {
	case keyFirst:
		return args[1:min(2, len(args))], true
	case keysAll:
		return args[1:], true
	case keysEval:
		return evalKeyArgs(args)
	}
	return nil, true
}

func evalKeyArgs(args [][]byte) ([][]byte, bool) {
	if len(args) < 3 {
		return nil, false
	}
	n, err := strconv.Atoi(string(args[2]))
	if err != nil || n < 0 || 3+n > len(args) {
		return nil, false
	}
	return args[3 : 3+n], true
}

// namesReservedKey reports whether a command of layout names a key in the
// proxy's own namespace.
func namesReservedKey(layout keyLayout, args [][]byte) bool {
	keys, _ := keyArgs(layout, args)
	for _, k := range keys {
		if bytes.HasPrefix(k, []byte(quorum.ReservedPrefix)) {
			return true
		}
	}
	return false
}
