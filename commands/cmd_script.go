package commands

import (
	"strings"
)

func init() {
	register(
		&command{name: "eval", arity: -3, write: true, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEval},
		&command{name: "evalsha", arity: -3, write: true, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEvalSHA},
		&command{name: "eval_ro", arity: -3, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEval},
		&command{name: "evalsha_ro", arity: -3, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEvalSHA},
		&command{name: "script", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdScript},
	)
}

func (h *Handler) cmdEval(c *call) {
	n, ok := numKeys(c)
	if !ok {
		return
	}
	s, ok := scripts[sha1Hex(c.arg(0))]
	if !ok {
		c.w.WriteError(msgOnlyLocks)
		return
	}
	h.runScript(c, s, n)
}

func (h *Handler) cmdEvalSHA(c *call) {
	n, ok := numKeys(c)
	if !ok {
		return
	}
	s, ok := scripts[strings.ToLower(c.arg(0))]
	if !ok {
		c.w.WriteError(msgNoScript)
		return
	}
	h.runScript(c, s, n)
}

// numKeys checks EVAL's numkeys as Redis does, before it looks at the
// script: a malformed call gets the same error whatever its body.
func numKeys(c *call) (int64, bool) {
	n, ok := parseInt(c.arg(1))
	switch {
	case !ok:
		c.w.WriteError(msgNotInt)
	case n > int64(len(c.args)-2):
		c.w.WriteError(msgTooManyKeys)
	case n < 0:
		c.w.WriteError(msgNegKeys)
	default:
		return n, true
	}
	return 0, false
}

// runScript splits EVAL's keys and args as Redis does.
func (h *Handler) runScript(c *call, s *lockScript, n int64) {
	if strings.HasSuffix(c.name, "_ro") && !s.readOnly {
		c.w.WriteError(msgROScript)
		return
	}
	rest := strs(c.args[2:])
	s.run(h, c, rest[:n], rest[n:])
}

func strs(b [][]byte) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	return out
}

// cmdScript: SCRIPT LOAD|EXISTS|FLUSH. Only recognised lock scripts load.
func (h *Handler) cmdScript(c *call) {
	sub := strings.ToUpper(c.arg(0))
	switch {
	case sub == "LOAD" && len(c.args) == 2:
		sha := sha1Hex(c.arg(1))
		if _, ok := scripts[sha]; !ok {
			c.w.WriteError(msgOnlyLocks)
			return
		}
		c.w.WriteBulkString(sha)
	case sub == "EXISTS" && len(c.args) >= 2:
		c.w.WriteArray(len(c.args) - 1)
		for _, a := range c.args[1:] {
			_, ok := scripts[strings.ToLower(string(a))]
			c.w.WriteInt(b2i(ok))
		}
	case sub == "FLUSH":
		// The recognised scripts are built in: there is nothing to forget.
		if len(c.args) == 1 || (len(c.args) == 2 && isFlushMode(c.arg(1))) {
			c.w.WriteSimple("OK")
			return
		}
		c.w.WriteError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
	case sub == "LOAD" || sub == "EXISTS":
		c.w.WriteError(errArity("script|" + strings.ToLower(sub)))
	default:
		c.w.WriteError(errUnknownSub(c.arg(0), "SCRIPT"))
	}
}

func isFlushMode(s string) bool {
	return strings.EqualFold(s, "SYNC") || strings.EqualFold(s, "ASYNC")
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
