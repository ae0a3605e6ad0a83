package commands

import (
	"crypto/sha1"
	"encoding/hex"
)

// lockScript is a client library's Lua script that redlockd recognises by
// the SHA1 of its exact body and runs as a quorum operation. It is never
// forwarded to a single backend.
type lockScript struct {
	// origin says which library (and version) sends this body.
	origin string
	body   string
	// readOnly scripts may run with EVAL_RO/EVALSHA_RO.
	readOnly bool
	// run executes the script's meaning over the quorum and writes the
	// reply the library expects.
	run func(h *Handler, c *call, keys, args []string)
	// start is the asynchronous form of run, for Start (see
	// command.start), or nil: a release as UNLOCK's (startRelease), an
	// extend as RENEW's (startExtend).
	start func(h *Handler, st *started) bool
	// sha is the body's SHA1, the name EVALSHA calls it by.
	sha string
}

// scripts holds the recognised lock scripts by SHA1 (EVALSHA's name for
// them), scriptBodies the same by body: EVAL finds one without hashing
// what it was sent.
var (
	scripts      = map[string]*lockScript{}
	scriptBodies = map[string]*lockScript{}
)

func registerScript(s *lockScript) {
	s.sha = sha1Hex(s.body)
	scripts[s.sha] = s
	scriptBodies[s.body] = s
}

// sha1Hex is the name Redis gives a script body.
func sha1Hex(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

func init() {
	registerScript(&lockScript{
		origin: "redlockd's compare-and-delete (also the Redis docs' release script)",
		body:   `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
		run:    scriptCompareAndDelete,
		start:  startRelease,
	})
}

// scriptCompareAndDelete runs as UNLOCK: 1 when released, else 0.
func scriptCompareAndDelete(h *Handler, c *call, keys, args []string) {
	if len(keys) != 1 || len(args) != 1 {
		c.w.WriteError("ERR the compare-and-delete script takes 1 key and 1 argument")
		return
	}
	h.writeRelease(c, keys[0], args[0])
}
