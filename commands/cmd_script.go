package commands

import (
	"context"
	"log/slog"
	"strings"
)

func init() {
	register(
		&command{name: "eval", arity: -3, write: true, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEval, start: (*Handler).startEval},
		&command{name: "evalsha", arity: -3, write: true, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEvalSHA, start: (*Handler).startEvalSHA},
		&command{name: "eval_ro", arity: -3, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEval},
		&command{name: "evalsha_ro", arity: -3, keys: keysEval, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdEvalSHA},
		&command{name: "script", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdScript},
	)
}

// cmdEval runs a recognised lock script natively, any other body that
// the static check admits as a replicated script.
func (h *Handler) cmdEval(c *call) {
	n, ok := numKeys(c)
	if !ok {
		return
	}
	body := c.arg(0)
	if s, ok := scriptBodies[body]; ok {
		h.debugScript(s.sha, s, nil)
		h.runScript(c, s, n)
		return
	}
	sha := sha1Hex(body)
	e := h.scripts.add(sha, body)
	h.debugScript(sha, nil, e)
	h.runReplicated(c, e, n)
}

// debugScript logs, at debug level, how a script was judged: a lock
// script recognised by its SHA1 (run natively), or the static check's
// verdict on a replicated one.
func (h *Handler) debugScript(sha string, known *lockScript, e *cachedScript) {
	log := h.opts.Logger
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	switch {
	case known != nil:
		log.Debug("script recognised: run natively", "sha", sha, "origin", known.origin)
	case e.err != nil:
		log.Debug("script refused by the static check", "sha", sha, "err", e.err)
	default:
		log.Debug("script admitted by the static check: replicated", "sha", sha, "writes", e.info.Writes)
	}
}

func (h *Handler) cmdEvalSHA(c *call) {
	n, ok := numKeys(c)
	if !ok {
		return
	}
	sha := strings.ToLower(c.arg(0))
	if s, ok := scripts[sha]; ok {
		h.debugScript(sha, s, nil)
		h.runScript(c, s, n)
		return
	}
	e, ok := h.scripts.get(sha)
	if !ok {
		c.w.WriteError(msgNoScript)
		return
	}
	h.debugScript(sha, nil, e)
	h.runReplicated(c, e, n)
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

// cmdScript: SCRIPT LOAD|EXISTS|FLUSH, over the recognised lock scripts
// (built in) and the proxy's script cache.
func (h *Handler) cmdScript(c *call) {
	sub := strings.ToUpper(c.arg(0))
	switch {
	case sub == "LOAD" && len(c.args) == 2:
		h.scriptLoad(c, c.arg(1))
	case sub == "EXISTS" && len(c.args) >= 2:
		c.w.WriteArray(len(c.args) - 1)
		for _, a := range c.args[1:] {
			sha := strings.ToLower(string(a))
			_, ok := scripts[sha]
			c.w.WriteInt(b2i(ok || h.scripts.has(sha)))
		}
	case sub == "FLUSH":
		// The recognised scripts are built in: only the cache is emptied.
		if len(c.args) == 1 || (len(c.args) == 2 && isFlushMode(c.arg(1))) {
			h.scripts.flush()
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

// scriptLoad checks and caches body: its SHA1, or the check's refusal.
func (h *Handler) scriptLoad(c *call, body string) {
	if s, ok := scriptBodies[body]; ok {
		c.w.WriteBulkString(s.sha)
		return
	}
	sha := sha1Hex(body)
	if e := h.scripts.add(sha, body); e.err != nil {
		c.w.WriteError(checkRefusal(e.err))
		return
	}
	c.w.WriteBulkString(sha)
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
