package commands

import "time"

func init() {
	registerScript(&lockScript{origin: "pottery Redlock acquired-ttl", body: potteryAcquired, readOnly: true, run: scriptPotteryAcquired})
	registerScript(&lockScript{origin: "pottery Redlock extend", body: potteryExtend, run: extendScript("pottery extend"), start: startExtend})
	registerScript(&lockScript{origin: "pottery Redlock release", body: potteryRelease, run: releaseScript("pottery release", 1), start: startRelease})
}

// scriptPotteryAcquired: the remaining ms that a majority agrees the token
// holds the key for, or 0 when it does not hold it on a majority.
func scriptPotteryAcquired(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "pottery acquired-ttl", keys, args, 1, 1) {
		return
	}
	switch hd, held, ok := h.tokenHolder(c, keys[0], args[0]); {
	case !ok:
	case !held || hd.PTTL <= 0: // a session lock has no expiry: 0, as on Redis
		c.w.WriteInt(0)
	default:
		c.w.WriteInt(pttlReply(hd, time.Millisecond))
	}
}
