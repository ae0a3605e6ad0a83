package commands

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
)

// Request is one command line (the name first), looked up in the command
// table once: the proxy asks of every pipelined command whether it may run
// alongside others and whether it may block, then runs it, and each of
// those would otherwise look the name up again.
type Request struct {
	Args [][]byte
	cmd  *command // nil: empty or unknown
}

// NewRequest looks args up in the command table.
func NewRequest(args [][]byte) Request {
	r := Request{Args: args}
	if len(args) > 0 {
		r.cmd, _ = lookup(args[0])
	}
	return r
}

// Keys is PipelineKeys for the request.
func (r Request) Keys() ([][]byte, bool) {
	if r.cmd == nil || r.cmd.pipe != pipeConcurrent {
		return nil, false
	}
	keys, ok := keyArgs(r.cmd.keys, r.Args)
	if !ok {
		// Where numkeys is not usable every argument counts, which can
		// only make the batch more sequential.
		return r.Args[1:], true
	}
	return keys, true
}

// ScriptBody is the body that an EVAL or EVAL_RO caches and runs; nil
// for any other request. A pipeline runs an EVALSHA after an EVAL of its
// body before it in the batch, as Redis does, so that it finds the body
// cached (see ScriptName).
func (r Request) ScriptBody() []byte {
	if r.cmd == nil || r.cmd.keys != keysEval || len(r.Args) < 2 || r.cmd.name == "evalsha" || r.cmd.name == "evalsha_ro" {
		return nil
	}
	return r.Args[1]
}

// ScriptName is the SHA1 that an EVALSHA or EVALSHA_RO names, as the
// client spelled it; nil for any other request.
func (r Request) ScriptName() []byte {
	if r.cmd == nil || len(r.Args) < 2 || (r.cmd.name != "evalsha" && r.cmd.name != "evalsha_ro") {
		return nil
	}
	return r.Args[1]
}

// ScriptNames reports whether name, a SHA1 as a client spells it (either
// case), names the script whose SHA1 is sum.
func ScriptNames(name []byte, sum *[sha1.Size]byte) bool {
	var hx [2 * sha1.Size]byte
	hex.Encode(hx[:], sum[:])
	return bytes.EqualFold(name, hx[:])
}

// MayBlock is MayBlock for the request.
func (r Request) MayBlock() bool {
	return r.cmd != nil && r.cmd.mayBlock != nil && r.cmd.mayBlock(r.Args)
}
