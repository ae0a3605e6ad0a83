package commands

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// node-redlock counts a node's vote only when the reply equals the number of
// resources, so success answers len(KEYS) and anything else 0 (release:
// the number of keys released on a majority).
func init() {
	for _, s := range []struct {
		origin, body string
		run          func(h *Handler, c *call, keys, args []string)
	}{
		{"node-redlock 4.0.0 acquire", redlockAcquireV40, scriptRedlockAcquire},
		{"node-redlock 4.1.0-4.2.0 acquire", redlockAcquireV41, scriptRedlockAcquire},
		{"node-redlock 5 acquire", redlockAcquireV5, scriptRedlockAcquire},
		{"node-redlock 4.0.0 extend", redlockExtendV40, scriptRedlockExtend},
		{"node-redlock 4.1.0 extend", redlockExtendV41, scriptRedlockExtend},
		{"node-redlock 4.2.0 extend", redlockExtendV42, scriptRedlockExtend},
		{"node-redlock 5 extend", redlockExtendV5, scriptRedlockExtend},
		{"node-redlock 4.0.0-4.1.0 release", redlockReleaseV40, scriptRedlockRelease},
		{"node-redlock 4.2.0 release", redlockReleaseV42, scriptRedlockRelease},
		{"node-redlock 5 release", redlockReleaseV5, scriptRedlockRelease},
	} {
		registerScript(&lockScript{origin: s.origin, body: s.body, run: s.run})
	}
}

// scriptRedlockAcquire: KEYS all absent on a majority of nodes, each node
// all-or-nothing -> #KEYS; else 0. ARGV: value, duration ms.
func scriptRedlockAcquire(h *Handler, c *call, keys, args []string) {
	ttl, ok := h.redlockTTL(c, "node-redlock acquire", keys, args)
	if !ok {
		return
	}
	var err error
	if len(keys) == 1 {
		_, err = h.clusterOf(c.s).Acquire(c.s.Context(), keys[0], args[0], ttl)
	} else {
		_, err = h.clusterOf(c.s).AcquireAll(c.s.Context(), keys, args[0], ttl)
	}
	h.took(c.s, err, args[0], keys...)
	h.writeRedlockCount(c, len(keys), err)
}

// scriptRedlockExtend: all KEYS hold the value on a majority -> #KEYS, the
// ttl replaced; else 0.
func scriptRedlockExtend(h *Handler, c *call, keys, args []string) {
	ttl, ok := h.redlockTTL(c, "node-redlock extend", keys, args)
	if !ok || (len(keys) > 1 && refuseOwnerExtend(c, args[0])) {
		return
	}
	var err error
	if len(keys) == 1 {
		_, err = h.renewToken(c.s, keys[0], args[0], ttl) // records the validity itself
	} else {
		var v time.Duration
		v, err = h.clusterOf(c.s).ExtendAll(c.s.Context(), keys, args[0], ttl)
		h.extended(c.s, v, err, args[0], keys...)
	}
	h.writeRedlockCount(c, len(keys), err)
}

// redlockTTL checks the shape of a node-redlock acquire or extend (one or
// more KEYS; ARGV value, duration ms) and returns its duration.
func (h *Handler) redlockTTL(c *call, script string, keys, args []string) (time.Duration, bool) {
	if !scriptArgs(c, script, keys, args, -1, 2) {
		return 0, false
	}
	return h.ttlArg(c, args[1], time.Millisecond)
}

func (h *Handler) writeRedlockCount(c *call, n int, err error) {
	if err != nil {
		h.writeScriptBool(c, err) // 0, or the NOQUORUM error
		return
	}
	c.w.WriteInt(int64(n))
}

// scriptRedlockRelease: how many KEYS the value held on a majority, all of
// them deleted wherever the value held them. Each key is released as
// UNLOCK releases it, so a kept lock stops being renewed.
func scriptRedlockRelease(h *Handler, c *call, keys, args []string) {
	if !scriptArgs(c, "node-redlock release", keys, args, -1, 1) {
		return
	}
	n, err := h.releaseEach(c.s, keys, args[0])
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	if n < len(keys) {
		noteVerdict(c.w, quorum.ErrNotHeld)
	}
	c.w.WriteInt(int64(n))
}
