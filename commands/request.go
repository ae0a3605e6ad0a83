package commands

import "bytes"

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

// Script is the lower-case SHA1 of the script an EVAL-family request
// runs, nil for any other. A pipeline runs two requests of one script in
// order, as Redis does, so that EVALSHA finds the body that an EVAL
// before it in the batch cached.
func (r Request) Script() []byte {
	if r.cmd == nil || r.cmd.keys != keysEval || len(r.Args) < 2 {
		return nil
	}
	if r.cmd.name == "evalsha" || r.cmd.name == "evalsha_ro" {
		return bytes.ToLower(r.Args[1])
	}
	return []byte(sha1Hex(string(r.Args[1])))
}

// MayBlock is MayBlock for the request.
func (r Request) MayBlock() bool {
	return r.cmd != nil && r.cmd.mayBlock != nil && r.cmd.mayBlock(r.Args)
}
