package commands

import "time"

func init() {
	registerScript(&lockScript{origin: "redis-py Lock release", body: redisPyRelease, run: scriptRedisPyRelease, release: true})
	registerScript(&lockScript{origin: "redis-py Lock extend", body: redisPyExtend, run: scriptRedisPyExtend})
	registerScript(&lockScript{origin: "redis-py Lock reacquire", body: redisPyReacquire, run: scriptRedisPyReacquire})
}

// scriptRedisPyRelease: 1 when the token held the lock on a majority, else 0
// (redis-py raises LockNotOwnedError on 0).
func scriptRedisPyRelease(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "redis-py release", keys, args, 1, 1) {
		return
	}
	h.writeRelease(c, keys[0], args[0])
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

// scriptRedisPyReacquire: ARGV[2] ms replaces the ttl; 1 or 0.
func scriptRedisPyReacquire(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "redis-py reacquire", keys, args, 1, 2) {
		return
	}
	h.scriptExtend(c, keys[0], args[0], args[1])
}
