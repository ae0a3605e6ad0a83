package commands

import (
	"fmt"

	"github.com/redlockd/redlockd/quorum"
)

// handOver: SET key next [PX ms|EX s] IFEQ old, as Redis 8.4 answers it:
// OK when the lock passed from old to next on a majority within its
// validity, null when old does not hold it on a majority. Without an
// expiry, next becomes a session lock of this connection, as any SET
// without one does. An owner's token is refused: its hold count cannot be
// handed over.
func (h *Handler) handOver(c *call, o setOpts) {
	key, old, next := c.arg(0), *o.ifeq, c.arg(1)
	switch {
	case quorum.IsOwnerToken(old) || quorum.IsOwnerToken(next):
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "IFEQ does not hand over a lock of LOCK … OWNER (its hold count stays with its owner)"))
		return
	case quorum.IsSharedToken(old) || quorum.IsSharedToken(next):
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "IFEQ does not hand over a lock of LOCK … SHARED (a reader is one of many)"))
		return
	case o.keepTTL:
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "KEEPTTL with IFEQ; give the new token's expiry (PX ms)"))
		return
	}
	ttl, session := o.ttl, o.ttl == 0
	if session {
		ttl = h.opts.SessionTTL
	}
	// The hand-over is waited for even when the client hangs up: undone
	// by the quorum, it would put back the old token, which the closing
	// session releases meanwhile (its release reaches each node behind the
	// swap), and the key would stay held by nobody. A gone client's new
	// token is released instead, once the round is in.
	l, err := h.clusterOf(c.s).HandOver(c.s.Unbound(), key, old, next, ttl)
	if err == nil && c.s.Context().Err() != nil {
		err = h.undoForGone(c.s, l)
	}
	h.took(c.s, c.s.DB(), err, next, key)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	// Old's renewals (a kept lock of this proxy) would only fail now, and
	// count as a loss what was handed over.
	if b := h.bound.get(lockRef{c.s.DB(), key, old}); b != nil {
		h.unbind(b)
	}
	if session {
		h.bind(c.s, key, next, ttl, l.Validity, bindSession)
	}
	c.w.WriteSimple("OK")
}
