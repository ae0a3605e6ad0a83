package commands

import "time"

func init() {
	registerScript(&lockScript{origin: "pottery Redlock acquired-ttl", body: potteryAcquired, readOnly: true, run: scriptPotteryAcquired})
	registerScript(&lockScript{origin: "pottery Redlock extend", body: potteryExtend, run: scriptPotteryExtend})
	registerScript(&lockScript{origin: "pottery Redlock release", body: potteryRelease, run: scriptPotteryRelease, release: true})
}

// scriptPotteryAcquired: the remaining ms that a majority agrees the token
// holds the key for, or 0 when it does not hold it on a majority.
func scriptPotteryAcquired(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "pottery acquired-ttl", keys, args, 1, 1) {
		return
	}
	hd, err := h.clusterOf(c.s).Get(c.s.Context(), keys[0])
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	h.sessionPTTL(c.s, keys[0], &hd) // a session lock has no expiry: 0, as on Redis
	if !hd.Held || hd.Token != args[0] || hd.PTTL <= 0 {
		c.w.WriteInt(0)
		return
	}
	c.w.WriteInt(pttlReply(hd, time.Millisecond))
}

// scriptPotteryExtend: ARGV[2] ms replaces the ttl; 1 or 0.
func scriptPotteryExtend(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "pottery extend", keys, args, 1, 2) {
		return
	}
	h.scriptExtend(c, keys[0], args[0], args[1])
}

// scriptPotteryRelease: 1 or 0.
func scriptPotteryRelease(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "pottery release", keys, args, 1, 1) {
		return
	}
	h.writeRelease(c, keys[0], args[0])
}
