package commands

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

// ScriptSHA1 is, for EVAL and EVAL_RO, the SHA1 of the body they cache
// and run (load true); for EVALSHA and EVALSHA_RO, the SHA1 they name, as
// the client spelled it (load false); nil for any other request. A
// pipeline runs an EVALSHA after an EVAL of its body before it in the
// batch, as Redis does, so that it finds the body cached.
func (r Request) ScriptSHA1() (sha []byte, load bool) {
	if r.cmd == nil || r.cmd.keys != keysEval || len(r.Args) < 2 {
		return nil, false
	}
	if r.cmd.name == "evalsha" || r.cmd.name == "evalsha_ro" {
		return r.Args[1], false
	}
	return []byte(sha1Hex(string(r.Args[1]))), true
}

// MayBlock is MayBlock for the request.
func (r Request) MayBlock() bool {
	return r.cmd != nil && r.cmd.mayBlock != nil && r.cmd.mayBlock(r.Args)
}
