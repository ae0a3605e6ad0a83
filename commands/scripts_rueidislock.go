package commands

import "time"

// rueidislock takes, extends and releases each of its keys by script, and
// each script means a command redlockd has: an acquire is SET (NX, or a
// forced takeover without it) with the expiry the script names, the
// extend is RENEW with the ttl left until the deadline it names, the
// release is UNLOCK. So they run as those commands do, one quorum round
// each, and answer as the scripts answer on one Redis: OK or null, 1 or
// 0.
func init() {
	for _, s := range []struct {
		origin, body string
		run          func(h *Handler, c *call, keys, args []string)
	}{
		{"rueidislock v1.0 acquire", rueidisAcquireAt, scriptAsSet("NX", "PXAT")},
		{"rueidislock v1.0 acquire (FallbackSETPX)", rueidisAcquirePX, scriptAsSet("NX", "PX")},
		{"rueidislock v1.0 forced acquire", rueidisForceAt, scriptAsSet("", "PXAT")},
		{"rueidislock v1.0 forced acquire (FallbackSETPX)", rueidisForcePX, scriptAsSet("", "PX")},
		{"rueidislock v1.0 extend", rueidisExtend, scriptRueidisExtend},
		{"rueidislock v1.0 release", rueidisRelease, releaseScript("rueidislock release", 2)},
	} {
		registerScript(&lockScript{origin: s.origin, body: s.body, run: s.run})
	}
}

// scriptAsSet runs an acquire script (KEYS[1]; ARGV value, expiry) as SET
// key value [nx] unit expiry, through SET's own code: the same checks,
// errors, bookkeeping and reply.
func scriptAsSet(nx, unit string) func(h *Handler, c *call, keys, args []string) {
	return func(h *Handler, c *call, keys, args []string) {
		if !scriptArgs(c, "rueidislock acquire", keys, args, 1, 2) {
			return
		}
		set := [][]byte{[]byte(keys[0]), []byte(args[0])}
		if nx != "" {
			set = append(set, []byte(nx))
		}
		set = append(set, []byte(unit), []byte(args[1]))
		h.cmdSet(&call{s: c.s, w: c.w, name: "set", args: set})
	}
}

// scriptRueidisExtend: where ARGV[1] holds KEYS[1], its expiry becomes the
// deadline ARGV[2] (unix ms, read against this host's wall clock, as SET
// PXAT is): 1 when a majority extended it, else 0. A deadline already
// past deletes the key there, as PEXPIREAT does: 1 when a majority
// released it.
func scriptRueidisExtend(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "rueidislock extend", keys, args, 1, 2) {
		return
	}
	if at, ok := parseInt(args[1]); ok && !time.Now().Before(time.UnixMilli(at)) {
		h.writeRelease(c, keys[0], args[0])
		return
	}
	ttl, ok := h.expiryArg(c, "PXAT", args[1]) // SET PXAT's checks and errors
	if !ok {
		return
	}
	_, err := h.renewToken(c.s, keys[0], args[0], ttl)
	h.writeScriptBool(c, err)
}
