package commands

import "time"

// bsm/redislock's refresh, release and remaining-ttl scripts mean RENEW,
// UNLOCK and a quorum read, and run as those do.
func init() {
	registerScript(&lockScript{origin: "bsm/redislock v0.9 refresh", body: bsmRefresh, run: extendScript("bsm/redislock refresh"), start: startExtend})
	registerScript(&lockScript{origin: "bsm/redislock v0.9 release", body: bsmRelease, run: releaseScript("bsm/redislock release", 1), start: startRelease})
	registerScript(&lockScript{origin: "bsm/redislock v0.9 ttl", body: bsmPTTL, readOnly: true, run: scriptBsmPTTL})
}

// scriptBsmPTTL: the key's remaining ms as PTTL answers it (-1 for a
// session lock) where the token holds it on a majority, as GET finds it,
// else -3.
func scriptBsmPTTL(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "bsm/redislock ttl", keys, args, 1, 1) {
		return
	}
	switch hd, held, ok := h.tokenHolder(c, keys[0], args[0]); {
	case !ok:
	case !held:
		c.w.WriteInt(-3)
	default:
		c.w.WriteInt(pttlReply(hd, time.Millisecond))
	}
}
