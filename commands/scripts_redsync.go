package commands

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// go-redsync's Mutex pointed at redlockd as its only pool counts each
// script's reply as that pool's vote, so each reply says what the quorum
// decided, in the library's own terms.
func init() {
	registerScript(&lockScript{origin: "go-redsync v4 delete", body: redsyncDelete, run: scriptRedsyncDelete})
	registerScript(&lockScript{origin: "go-redsync v4 touch", body: redsyncTouch, run: extendScript("go-redsync touch"), start: startExtend})
	registerScript(&lockScript{origin: "go-redsync v4 touch-or-setnx", body: redsyncTouchOrSetNX, run: scriptRedsyncTouchOrSetNX})
}

// scriptRedsyncDelete: 1 released on a majority, -1 absent on a majority
// (redsync's ErrLockAlreadyExpired), 0 otherwise. It releases as UNLOCK
// does, so a kept lock stops being renewed.
func scriptRedsyncDelete(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "go-redsync delete", keys, args, 1, 1) {
		return
	}
	res := quorum.ReleasedOther
	ok, err := h.releaseTokenWith(c.s, keys[0], args[0], func(ctx context.Context, key, token string) (bool, error) {
		var err error
		res, err = h.clusterOf(c.s).ReleaseStatus(ctx, key, token)
		return res == quorum.Released, err
	})
	switch {
	case err != nil:
		writeLockError(c.w, c.name, err)
	case ok:
		c.w.WriteInt(int64(quorum.Released))
	case res == quorum.ReleasedAbsent:
		noteVerdict(c.w, quorum.ErrNotHeld)
		c.w.WriteInt(int64(res))
	default:
		noteVerdict(c.w, quorum.ErrNotHeld)
		c.w.WriteInt(int64(quorum.ReleasedOther))
	}
}

// scriptRedsyncTouchOrSetNX: as touch, and takes the key where it is free.
func scriptRedsyncTouchOrSetNX(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "go-redsync touch-or-setnx", keys, args, 1, 2) {
		return
	}
	ttl, ok := h.ttlArg(c, args[1], time.Millisecond)
	if !ok || refuseOwnerExtend(c, args[0]) {
		return
	}
	v, err := h.clusterOf(c.s).ExtendOrAcquire(c.s.Context(), keys[0], args[0], ttl)
	h.took(c.s, c.s.DB(), err, args[0], keys[0])
	h.extended(c.s, v, err, args[0], keys[0])
	h.writeScriptBool(c, err)
}
