package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Redis's reply to a write from EVAL_RO (Redis adds the script position).
const msgROScript = "ERR Write commands are not allowed from read-only scripts."

// scriptArgs checks a script's key and argument counts. Redis would run the
// body with whatever it got; a lock script called with the wrong shape is
// a client bug that deserves a plain error rather than a guess.
func scriptArgs(c *call, s string, keys, args []string, nkeys, nargs int) bool {
	if (nkeys >= 0 && len(keys) != nkeys) || (nkeys < 0 && len(keys) < 1) || len(args) != nargs {
		k := fmt.Sprint(nkeys)
		if nkeys < 0 {
			k = "at least 1"
		}
		c.w.WriteError(fmt.Sprintf("ERR the %s script takes %s key(s) and %d argument(s)", s, k, nargs))
		return false
	}
	return true
}

// writeScriptBool answers 1 or 0 as the lock scripts do: contention and a
// lost lock are 0, never null or an error; only a missing quorum is an error.
func (h *Handler) writeScriptBool(c *call, err error) {
	switch {
	case err == nil:
		c.w.WriteInt(1)
	case errors.Is(err, quorum.ErrNotAcquired), errors.Is(err, quorum.ErrNotHeld):
		noteVerdict(c.w, err)
		c.w.WriteInt(0)
	default:
		writeLockError(c.w, c.name, err)
	}
}

// tokenHolder reads key for a library's script that asks whether token
// holds it, as GET and PTTL read it (holder). A failed read is answered
// here, and ok is false.
func (h *Handler) tokenHolder(c *call, key, token string) (hd quorum.Holder, held, ok bool) {
	hd, ok = h.holder(c, key)
	return hd, ok && hd.Held && hd.Token == token, ok
}

// releaseScript is the run of a library's release script, name in its
// errors: KEYS[1], then nargs arguments of which ARGV[1] is the token. It
// runs as UNLOCK: 1 when released, else 0.
func releaseScript(name string, nargs int) func(h *Handler, c *call, keys, args []string) {
	return func(h *Handler, c *call, keys, args []string) {
		if scriptArgs(c, name, keys, args, 1, nargs) {
			h.writeRelease(c, keys[0], args[0])
		}
	}
}

// extendScript is the run of a library's extend script, name in its
// errors: KEYS[1]; ARGV the token and the ms that replace the ttl
// (scriptExtend): 1 or 0.
func extendScript(name string) func(h *Handler, c *call, keys, args []string) {
	return func(h *Handler, c *call, keys, args []string) {
		if scriptArgs(c, name, keys, args, 1, 2) {
			h.scriptExtend(c, keys[0], args[0], args[1])
		}
	}
}

// scriptExtend replaces the ttl where token holds key: 1 or 0. It is
// RENEW: an owner lock's hold count is extended with it.
func (h *Handler) scriptExtend(c *call, key, token, ms string) {
	ttl, ok := h.ttlArg(c, ms, time.Millisecond)
	if !ok {
		return
	}
	_, err := h.renewToken(c.s, key, token, ttl)
	h.writeScriptBool(c, err)
}

// refuseOwnerExtend refuses an extend form that has no owner-lock version
// (a relative ttl, several keys at once, extend-or-acquire) for a token of
// LOCK … OWNER: its
// hold count must be extended with the lock, or it expires first and one
// UNLOCK frees a lock that other holds still keep.
func refuseOwnerExtend(c *call, token string) bool {
	if !quorum.IsOwnerToken(token) {
		return false
	}
	c.w.WriteError(fmt.Sprintf(msgNotSupported, c.name, "an OWNER lock is extended with RENEW or a single-key extend that replaces its ttl"))
	return true
}
