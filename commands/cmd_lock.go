package commands

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(
		&command{name: "lock", arity: -3, write: true, keys: keyFirst, pipe: pipeConcurrent, mayBlock: lockWaits, outcome: outcomeAcquire, run: (*Handler).cmdLock, start: (*Handler).startLock},
		&command{name: "renew", arity: 4, write: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdRenew, start: (*Handler).startRenew},
		&command{name: "unlock", arity: 3, write: true, deletes: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdUnlock, start: (*Handler).startUnlock},
		&command{name: "get", arity: 2, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdGet},
		&command{name: "pttl", arity: 2, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdPTTL},
		&command{name: "del", arity: -2, write: true, deletes: true, keys: keysAll, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdDel},
	)
}

// undoForGone releases a lock whose round was still in flight when its
// client hung up: nobody will be told of it, so it must not live out its
// ttl with no holder.
func (h *Handler) undoForGone(s *Session, l quorum.Lock) error {
	ctx := s.Unbound()
	_, _ = h.clusterOf(s).Release(ctx, l.Key, l.Token)
	return s.Context().Err()
}

// cmdRenew: RENEW key token ttl -> validity-ms or null.
func (h *Handler) cmdRenew(c *call) {
	ttl, ok := h.ttlArg(c, c.arg(2), time.Millisecond)
	if !ok {
		return
	}
	v, err := h.renewToken(c.s, c.arg(0), c.arg(1), ttl)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteInt(truncMillis(v))
}

// cmdUnlock: UNLOCK key token -> 1 when released from a majority, else 0.
func (h *Handler) cmdUnlock(c *call) {
	h.writeRelease(c, c.arg(0), c.arg(1))
}

// writeRelease is the compare-and-delete of UNLOCK and of most libraries'
// release scripts: 1 when released from a majority, else 0.
func (h *Handler) writeRelease(c *call, key, token string) {
	ok, err := h.releaseToken(c.s, key, token)
	writeReleased(c.w, c.name, ok, err)
}

// writeReleased writes a release's reply: the same from a worker and from
// the round's last reply (releaseAsync).
func writeReleased(w Writer, name string, ok bool, err error) {
	if err != nil {
		writeLockError(w, name, err)
		return
	}
	if ok {
		w.WriteInt(1)
		return
	}
	noteVerdict(w, quorum.ErrNotHeld)
	w.WriteInt(0)
}

// holder is every read of who holds key (GET, PTTL, TTL, EXISTS, the
// library scripts that ask): the token holding it on a majority, except
// that a kept lock this session lost is not held, whatever copies of it
// are left, and a session lock has no expiry (PTTL -1). A failed read is
// answered here, and ok is false.
func (h *Handler) holder(c *call, key string) (hd quorum.Holder, ok bool) {
	hd, err := h.clusterOf(c.s).Get(c.s.Context(), key)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return hd, false
	}
	if hd.Held && h.bound.wasLost(lockRef{c.s.DB(), key, hd.Token}, c.s.ID) {
		return quorum.Holder{}, true
	}
	h.sessionPTTL(c.s, key, &hd)
	return hd, true
}

// cmdGet: GET key -> the token holding the lock on a majority, or null;
// where a majority holds a value of another type there (a hash that a
// script wrote), the error GET gives on Redis (WRONGTYPE).
func (h *Handler) cmdGet(c *call) {
	hd, ok := h.holder(c, c.arg(0))
	switch {
	case !ok:
	case hd.ErrReply != "":
		c.w.WriteError(hd.ErrReply)
	case !hd.Held:
		c.w.WriteNull()
	default:
		c.w.WriteBulkString(hd.Token)
	}
}

// cmdPTTL: PTTL key -> agreed remaining ms, -1 without expiry, -2 when not
// held; as Redis, whatever type of value the key holds.
func (h *Handler) cmdPTTL(c *call) {
	if hd, ok := h.holder(c, c.arg(0)); ok {
		c.w.WriteInt(pttlReply(hd, time.Millisecond))
	}
}

// pttlReply is hd's remaining ttl in unit: -2 where the key is not held
// (nor holds a value of another type on a majority), -1 without expiry.
func pttlReply(hd quorum.Holder, unit time.Duration) int64 {
	switch {
	case !hd.Exists():
		return -2
	case hd.PTTL < 0:
		return -1
	}
	n := int64(hd.PTTL / unit)
	if n == 0 && unit == time.Millisecond {
		n = 1
	}
	return n
}

// cmdDel: DEL key [key …] -> how many keys were held on a majority.
func (h *Handler) cmdDel(c *call) {
	var n int64
	// Every key is deleted even when the client hangs up meanwhile, as
	// Redis runs a command it has read to its end.
	ctx := c.s.Unbound()
	for _, k := range c.args {
		h.unbindKey(c.s.DB(), string(k)) // first: no renewal in flight may put it back
		held, err := h.clusterOf(c.s).Delete(ctx, string(k))
		if err != nil {
			writeLockError(c.w, c.name, err)
			return
		}
		if held {
			n++
		}
	}
	c.w.WriteInt(n)
}
