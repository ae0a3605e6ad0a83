package commands

import (
	"time"
)

func init() {
	register(&command{name: "set", arity: -3, write: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomeAcquire, run: (*Handler).cmdSet, start: (*Handler).startSet})
}

// setOpts are the options of SET key value […], parsed as Redis parses them.
type setOpts struct {
	nx, xx, get, keepTTL bool
	ttl                  time.Duration // 0: no expiry given
	ifeq                 *string       // IFEQ's comparison value, when given
}

// parseSet parses SET's options in any order, writing Redis's error on failure.
func (h *Handler) parseSet(c *call) (setOpts, bool) {
	var o setOpts
	for i := 2; i < len(c.args); i++ {
		opt := setWord(c.args[i])
		switch {
		case opt == "NX" && !o.xx && o.ifeq == nil:
			o.nx = true
		case opt == "XX" && !o.nx:
			o.xx = true
		case opt == "IFEQ" && !o.nx && o.ifeq == nil && i+1 < len(c.args):
			i++
			v := c.arg(i)
			o.ifeq = &v
		case opt == "GET":
			o.get = true
		case opt == "KEEPTTL" && o.ttl == 0:
			o.keepTTL = true
		case isExpiryOpt(opt) && o.ttl == 0 && !o.keepTTL && i+1 < len(c.args):
			i++
			ttl, ok := h.expiryArg(c, opt, c.arg(i))
			if !ok {
				return o, false
			}
			o.ttl = ttl
		default:
			c.w.WriteError(msgSyntax)
			return o, false
		}
	}
	return o, true
}

// setWords are SET's option words.
var setWords = []string{"NX", "XX", "GET", "IFEQ", "KEEPTTL", "PX", "EX", "PXAT", "EXAT"}

// setWord is the option word w spells in any ASCII case (as Redis compares
// option words), or "" for none; it allocates nothing, as SET NX PX is
// the most frequent command of all.
func setWord(w []byte) string {
	for _, word := range setWords {
		if asciiEqualFold(w, word) {
			return word
		}
	}
	return ""
}

func isExpiryOpt(opt string) bool {
	return opt == "PX" || opt == "EX" || opt == "PXAT" || opt == "EXAT"
}

// expiryArg turns EX/PX/EXAT/PXAT into a ttl. The absolute forms are read
// against this host's wall clock, the only one a client could have meant.
func (h *Handler) expiryArg(c *call, opt, val string) (time.Duration, bool) {
	switch opt {
	case "PX":
		return h.ttlArg(c, val, time.Millisecond)
	case "EX":
		return h.ttlArg(c, val, time.Second)
	}
	n, ok := parseInt(val)
	if !ok {
		c.w.WriteError(msgNotInt)
		return 0, false
	}
	at := time.UnixMilli(n)
	if opt == "EXAT" {
		at = time.Unix(n, 0)
	}
	ttl := time.Until(at)
	if n <= 0 || ttl <= 0 {
		c.w.WriteError(errExpire(c.name))
		return 0, false
	}
	if ttl > h.opts.MaxTTL {
		c.w.WriteError(msgTTLTooLarge)
		return 0, false
	}
	return ttl, true
}

// cmdSet: SET key token NX PX ms (or EX s) acquires the lock; the value is
// the token. OK when acquired, null when not.
func (h *Handler) cmdSet(c *call) {
	o, ok := h.parseSet(c)
	if !ok {
		return
	}
	if h.setForm(c, o) {
		return
	}
	h.runAcquire(c, o.ttl, false)
}
