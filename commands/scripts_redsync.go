package commands

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// go-redsync's Mutex pointed at redlockd as its only pool counts each
// script's reply as that pool's vote, so each reply says what the quorum
// decided, in the library's own terms.
func init() {
	registerScript(&lockScript{origin: "go-redsync v4 delete", body: redsyncDelete, run: scriptRedsyncDelete})
	registerScript(&lockScript{origin: "go-redsync v4 touch", body: redsyncTouch, run: scriptRedsyncTouch})
	registerScript(&lockScript{origin: "go-redsync v4 touch-or-setnx", body: redsyncTouchOrSetNX, run: scriptRedsyncTouchOrSetNX})
}

// scriptRedsyncDelete: 1 released on a majority, -1 absent on a majority
// (redsync's ErrLockAlreadyExpired), 0 otherwise.
func scriptRedsyncDelete(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "go-redsync delete", keys, args, 1, 1) {
		return
	}
	res, err := h.cluster.ReleaseStatus(c.s.Context(), keys[0], args[0])
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	if res == quorum.Released {
		h.stats.released.Add(1)
	}
	c.w.WriteInt(int64(res))
}

// scriptRedsyncTouch: ARGV[2] ms replaces the ttl where the token holds the
// key; 1 when a majority did, else 0.
func scriptRedsyncTouch(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "go-redsync touch", keys, args, 1, 2) {
		return
	}
	h.scriptExtend(c, keys[0], args[0], args[1])
}

// scriptRedsyncTouchOrSetNX: as touch, and takes the key where it is free.
func scriptRedsyncTouchOrSetNX(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "go-redsync touch-or-setnx", keys, args, 1, 2) {
		return
	}
	ttl, ok := h.ttlArg(c, args[1], time.Millisecond)
	if !ok {
		return
	}
	_, err := h.cluster.ExtendOrAcquire(c.s.Context(), keys[0], args[0], ttl)
	h.writeScriptBool(c, err)
}
