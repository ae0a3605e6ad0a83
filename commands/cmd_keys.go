package commands

import (
	"fmt"
	"strings"
	"time"
)

// The rest of Redis's key surface that lock code touches, and the
// native compare-and-set forms of newer servers, as docs/commands.md lists them.
func init() {
	register(
		&command{name: "ttl", arity: 2, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdTTL},
		&command{name: "exists", arity: -2, keys: keysAll, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdExists},
		&command{name: "pexpire", arity: -3, write: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdPExpire},
		&command{name: "expire", arity: -3, write: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdExpire},
		&command{name: "delifeq", arity: 3, write: true, deletes: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdDelIfEq, start: (*Handler).startUnlock},
		&command{name: "delex", arity: -2, write: true, deletes: true, keys: keyFirst, pipe: pipeConcurrent, outcome: outcomePlain, run: (*Handler).cmdDelEx},
	)
}

// cmdTTL: TTL key -> agreed remaining seconds, rounded as Redis rounds them;
// -1 without expiry, -2 when not held.
func (h *Handler) cmdTTL(c *call) {
	hd, ok := h.holder(c, c.arg(0))
	if !ok {
		return
	}
	n := pttlReply(hd, time.Millisecond)
	if n > 0 {
		n = (n + 500) / 1000
	}
	c.w.WriteInt(n)
}

// cmdExists: EXISTS key [key …] -> how many of the keys (repeats counted,
// as Redis counts them) are held on a majority, or hold a value of another
// type there (a hash that a script wrote), which Redis counts too.
func (h *Handler) cmdExists(c *call) {
	var n int64
	for _, k := range c.args {
		hd, ok := h.holder(c, string(k))
		if !ok {
			return
		}
		if hd.Exists() {
			n++
		}
	}
	c.w.WriteInt(n)
}

func (h *Handler) cmdPExpire(c *call) { h.expire(c, time.Millisecond) }
func (h *Handler) cmdExpire(c *call)  { h.expire(c, time.Second) }

// expire: [P]EXPIRE key n -> 1 when a majority held the key (its ttl is now
// n on every node that has it), else 0. As in Redis, n <= 0 deletes the key.
func (h *Handler) expire(c *call, unit time.Duration) {
	if !h.expireOptions(c) {
		return
	}
	n, ok := parseInt(c.arg(1))
	if !ok {
		c.w.WriteError(msgNotInt)
		return
	}
	var ttl time.Duration
	if n > 0 {
		var msg string
		if ttl, msg = h.expiryTTL(n, unit, c.name); msg != "" {
			c.w.WriteError(msg)
			return
		}
	}
	// The client sets the key's life from now on: the proxy stops
	// renewing it first, so that no renewal in flight extends it (or puts
	// it back on a backend) after the new ttl or the delete.
	h.unbindKey(c.s.DB(), c.arg(0))
	var held bool
	var err error
	if ttl <= 0 {
		held, err = h.clusterOf(c.s).Delete(c.s.Context(), c.arg(0))
	} else {
		held, err = h.clusterOf(c.s).Expire(c.s.Context(), c.arg(0), ttl)
	}
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteInt(b2i(held))
}

// expireOptions refuses Redis 7's NX|XX|GT|LT: each compares with the ttl
// of one server, and the nodes' ttls differ slightly, so the verdict would
// depend on which node is asked.
func (h *Handler) expireOptions(c *call) bool {
	if len(c.args) <= 2 {
		return true
	}
	a := c.args[2] // the first option decides, as in Redis
	switch opt := strings.ToUpper(string(a)); opt {
	case "NX", "XX", "GT", "LT":
		c.w.WriteError(fmt.Sprintf(msgNotSupported, c.name, opt+" is not supported"))
	default:
		c.w.WriteError("ERR Unsupported option " + string(a))
	}
	return false
}

// cmdDelIfEq: DELIFEQ key token -> 1 released, 0 not held by token.
func (h *Handler) cmdDelIfEq(c *call) { h.writeRelease(c, c.arg(0), c.arg(1)) }

// cmdDelEx: DELEX key [IFEQ token] -> 1/0. Without a condition it is DEL.
func (h *Handler) cmdDelEx(c *call) {
	switch {
	case len(c.args) == 1:
		h.cmdDel(c)
	case len(c.args) != 3:
		c.w.WriteError(msgSyntax)
	case strings.EqualFold(c.arg(1), "IFEQ"):
		h.writeRelease(c, c.arg(0), c.arg(2))
	case isDelExCond(c.arg(1)):
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "delex", "only IFEQ compares tokens"))
	default:
		c.w.WriteError(msgSyntax)
	}
}

func isDelExCond(s string) bool {
	switch strings.ToUpper(s) {
	case "IFNE", "IFDEQ", "IFDNE":
		return true
	}
	return false
}

// setIfEq: SET key token [XX] PX ms IFEQ token extends the lock: OK when
// token held it on a majority (ttl replaced), null when not. With another
// value, SET key new [PX ms] IFEQ old hands the lock over (handOver).
func (h *Handler) setIfEq(c *call, o setOpts) {
	switch {
	case *o.ifeq != c.arg(1):
		h.handOver(c, o)
		return
	case o.ttl == 0:
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "set", "IFEQ needs an expiry: SET key token PX ms IFEQ token"))
		return
	}
	// RENEW's path: an owner lock's hold count is extended with it, and a
	// kept lock keeps the validity told here through its renewals.
	if _, err := h.renewToken(c.s, c.arg(0), c.arg(1), o.ttl); err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteSimple("OK")
}

// forceSet: SET key token PX ms without NX takes the lock over on every
// node: OK when a majority stored it within its validity. The key expires
// by the client's word then: a kept lock on it is no longer renewed (ended
// first, so that no renewal in flight extends it past the new ttl).
func (h *Handler) forceSet(c *call, o setOpts) {
	h.unbindKey(c.s.DB(), c.arg(0))
	_, err := h.clusterOf(c.s).ForceSet(c.s.Context(), c.arg(0), c.arg(1), o.ttl)
	h.took(c.s, c.s.DB(), err, c.arg(1), c.arg(0))
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	c.w.WriteSimple("OK")
}
