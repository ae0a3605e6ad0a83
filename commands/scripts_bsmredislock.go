package commands

import "time"

// bsm/redislock's refresh, release and remaining-ttl scripts mean RENEW,
// UNLOCK and a quorum read, and run as those do.
func init() {
	registerScript(&lockScript{origin: "bsm/redislock v0.9 refresh", body: bsmRefresh, run: scriptBsmRefresh})
	registerScript(&lockScript{origin: "bsm/redislock v0.9 release", body: bsmRelease, run: scriptBsmRelease, release: true})
	registerScript(&lockScript{origin: "bsm/redislock v0.9 ttl", body: bsmPTTL, readOnly: true, run: scriptBsmPTTL})
}

// scriptBsmRefresh: ARGV[2] ms replaces the ttl; 1 or 0.
func scriptBsmRefresh(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "bsm/redislock refresh", keys, args, 1, 2) {
		return
	}
	h.scriptExtend(c, keys[0], args[0], args[1])
}

// scriptBsmRelease: 1 or 0.
func scriptBsmRelease(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "bsm/redislock release", keys, args, 1, 1) {
		return
	}
	h.writeRelease(c, keys[0], args[0])
}

// scriptBsmPTTL: the key's remaining ms as PTTL answers it (-1 for a
// session lock) where the token holds it on a majority, as GET finds it,
// else -3.
func scriptBsmPTTL(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "bsm/redislock ttl", keys, args, 1, 1) {
		return
	}
	hd, err := h.clusterOf(c.s).Get(c.s.Context(), keys[0])
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	if !hd.Held || hd.Token != args[0] || h.bound.wasLost(lockRef{c.s.DB(), keys[0], hd.Token}, c.s.ID) {
		c.w.WriteInt(-3)
		return
	}
	h.sessionPTTL(c.s, keys[0], &hd) // a session lock has no expiry, as PTTL says
	c.w.WriteInt(pttlReply(hd, time.Millisecond))
}
