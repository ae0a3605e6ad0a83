package commands

import "time"

func init() {
	// The release answers 0 where the token did not hold the lock on a
	// majority: redis-py raises LockNotOwnedError then.
	registerScript(&lockScript{origin: "redis-py Lock release", body: redisPyRelease, run: releaseScript("redis-py release", 1), start: startRelease})
	registerScript(&lockScript{origin: "redis-py Lock extend", body: redisPyExtend, run: scriptRedisPyExtend, start: startRedisPyExtend})
	registerScript(&lockScript{origin: "redis-py Lock reacquire", body: redisPyReacquire, run: extendScript("redis-py reacquire"), start: startExtend})
}

// scriptRedisPyExtend: ARGV[3] == "0" adds ARGV[2] ms to the remaining ttl
// (Lock.extend's default), anything else replaces it; 1 or 0. The sum is
// capped at max-ttl: the restart quarantine assumes no lock outlives it.
func scriptRedisPyExtend(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "redis-py extend", keys, args, 1, 3) {
		return
	}
	if args[2] != "0" {
		h.scriptExtend(c, keys[0], args[0], args[1])
		return
	}
	add, ok := h.ttlArg(c, args[1], time.Millisecond)
	if !ok || refuseOwnerExtend(c, args[0]) {
		return
	}
	v, err := h.clusterOf(c.s).ExtendAdd(c.s.Context(), keys[0], args[0], add, h.opts.MaxTTL)
	h.extended(c.s, v, err, args[0], keys[0])
	h.writeScriptBool(c, err)
}
