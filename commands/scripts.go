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
	// release marks a compare-and-delete of KEYS[1] by ARGV[1] that runs
	// as UNLOCK: in a pipeline it has UNLOCK's asynchronous form.
	release bool
	// extend marks a replacement of KEYS[1]'s ttl by ARGV[2] ms where
	// ARGV[1] holds it (extendScript): it has RENEW's asynchronous form.
	extend bool
}

var scripts = map[string]*lockScript{}

func registerScript(s *lockScript) {
	scripts[sha1Hex(s.body)] = s
}

// sha1Hex is the name Redis gives a script body.
func sha1Hex(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

func init() {
	registerScript(&lockScript{
		origin:  "redlockd's compare-and-delete (also the Redis docs' release script)",
		body:    `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
		run:     scriptCompareAndDelete,
		release: true,
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
