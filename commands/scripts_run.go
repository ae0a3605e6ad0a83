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
