package commands

import (
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(
		&command{name: "lock", arity: -3, write: true, run: (*Handler).cmdLock},
		&command{name: "renew", arity: 4, write: true, run: (*Handler).cmdRenew},
		&command{name: "unlock", arity: 3, write: true, run: (*Handler).cmdUnlock},
		&command{name: "get", arity: 2, run: (*Handler).cmdGet},
		&command{name: "pttl", arity: 2, run: (*Handler).cmdPTTL},
		&command{name: "del", arity: -2, write: true, run: (*Handler).cmdDel},
	)
}

// lockOpts are the options of LOCK key ttl [WAIT ms] [TOKEN t].
type lockOpts struct {
	ttl   time.Duration
	wait  time.Duration
	token string
}

func (h *Handler) parseLock(c *call) (lockOpts, bool) {
	var o lockOpts
	ttl, ok := h.ttlArg(c, c.arg(1), time.Millisecond)
	if !ok {
		return o, false
	}
	o.ttl = ttl
	for i := 2; i < len(c.args); i++ {
		opt := strings.ToUpper(c.arg(i))
		if i+1 >= len(c.args) || (opt != "WAIT" && opt != "TOKEN") {
			c.w.WriteError(msgSyntax)
			return o, false
		}
		i++
		switch opt {
		case "WAIT":
			if o.wait, ok = msArg(c, c.arg(i)); !ok {
				return o, false
			}
		case "TOKEN":
			if o.token = c.arg(i); o.token == "" {
				c.w.WriteError(msgSyntax)
				return o, false
			}
		}
	}
	if o.token == "" {
		o.token = quorum.NewToken()
	}
	return o, true
}

// cmdLock: LOCK key ttl [WAIT ms] [TOKEN t] -> [token, validity-ms] or null.
func (h *Handler) cmdLock(c *call) {
	o, ok := h.parseLock(c)
	if !ok {
		return
	}
	l, err := h.acquire(c.s, c.arg(0), o.token, o.ttl, o.wait)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteArray(2)
	c.w.WriteBulkString(l.Token)
	c.w.WriteInt(millis(l.Validity))
}

func (h *Handler) acquire(s *Session, key, token string, ttl, wait time.Duration) (quorum.Lock, error) {
	var l quorum.Lock
	var err error
	if wait > 0 {
		l, err = h.cluster.AcquireWait(s.Context(), key, token, ttl, wait)
	} else {
		l, err = h.cluster.Acquire(s.Context(), key, token, ttl)
	}
	h.count(err)
	return l, err
}

func (h *Handler) count(err error) {
	switch {
	case err == nil:
		h.stats.acquired.Add(1)
	case isNoQuorum(err):
		h.stats.noQuorum.Add(1)
	default:
		h.stats.contended.Add(1)
	}
}

// cmdRenew: RENEW key token ttl -> validity-ms or null.
func (h *Handler) cmdRenew(c *call) {
	ttl, ok := h.ttlArg(c, c.arg(2), time.Millisecond)
	if !ok {
		return
	}
	v, err := h.cluster.Extend(c.s.Context(), c.arg(0), c.arg(1), ttl)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteInt(millis(v))
}

// cmdUnlock: UNLOCK key token -> 1 when released from a majority, else 0.
func (h *Handler) cmdUnlock(c *call) {
	h.writeRelease(c, c.arg(0), c.arg(1))
}

func (h *Handler) writeRelease(c *call, key, token string) {
	ok, err := h.cluster.Release(c.s.Context(), key, token)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	if ok {
		h.stats.released.Add(1)
		c.w.WriteInt(1)
		return
	}
	c.w.WriteInt(0)
}

// cmdGet: GET key -> the token holding the lock on a majority, or null.
func (h *Handler) cmdGet(c *call) {
	hd, err := h.cluster.Get(c.s.Context(), c.arg(0))
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	if !hd.Held {
		c.w.WriteNull()
		return
	}
	c.w.WriteBulkString(hd.Token)
}

// cmdPTTL: PTTL key -> agreed remaining ms, -1 without expiry, -2 when not held.
func (h *Handler) cmdPTTL(c *call) {
	hd, err := h.cluster.Get(c.s.Context(), c.arg(0))
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteInt(pttlReply(hd, time.Millisecond))
}

func pttlReply(hd quorum.Holder, unit time.Duration) int64 {
	switch {
	case !hd.Held:
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
	for _, k := range c.args {
		held, err := h.cluster.Delete(c.s.Context(), string(k))
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
