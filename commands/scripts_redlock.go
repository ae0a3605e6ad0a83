package commands

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// node-redlock counts a node's vote only when the reply equals the number of
// resources, so success answers len(KEYS) and anything else 0 (release:
// the number of keys released on a majority).
func init() {
	// With one key, each is the plain lock's: acquire, renew (RENEW's
	// replacement of the ttl) and release answer 1 or 0, and have the
	// plain lock's asynchronous forms.
	for _, s := range []struct {
		origin, body string
		run          func(h *Handler, c *call, keys, args []string)
		start        func(h *Handler, st *started) bool
	}{
		{"node-redlock 4.0.0 acquire", redlockAcquireV40, scriptRedlockAcquire, startRedlockAcquire},
		{"node-redlock 4.1.0-4.2.0 acquire", redlockAcquireV41, scriptRedlockAcquire, startRedlockAcquire},
		{"node-redlock 5 acquire", redlockAcquireV5, scriptRedlockAcquire, startRedlockAcquire},
		{"node-redlock 4.0.0 extend", redlockExtendV40, scriptRedlockExtend, startExtend},
		{"node-redlock 4.1.0 extend", redlockExtendV41, scriptRedlockExtend, startExtend},
		{"node-redlock 4.2.0 extend", redlockExtendV42, scriptRedlockExtend, startExtend},
		{"node-redlock 5 extend", redlockExtendV5, scriptRedlockExtend, startExtend},
		{"node-redlock 4.0.0-4.1.0 release", redlockReleaseV40, scriptRedlockRelease, startRelease},
		{"node-redlock 4.2.0 release", redlockReleaseV42, scriptRedlockRelease, startRelease},
		{"node-redlock 5 release", redlockReleaseV5, scriptRedlockRelease, startRelease},
	} {
		registerScript(&lockScript{origin: s.origin, body: s.body, run: s.run, start: s.start})
	}
}

// startRedlockAcquire is node-redlock's acquire of one key in its
// asynchronous form, the plain lock's: script numkeys=1 key value ms ->
// 1, or 0 where it is held.
func startRedlockAcquire(h *Handler, st *started) bool {
	if len(st.args) != 5 {
		return false
	}
	key, token := st.argPair(2, 3)
	ttl, ok := h.ttlArg(&st.call, st.arg(4), time.Millisecond)
	if !ok {
		st.end()
		return true
	}
	h.acquireAsync(st, quorum.SetNX, key, token, ttl, replyBool)
	return true
}

// scriptRedlockAcquire: KEYS all absent on a majority of nodes, each node
// all-or-nothing -> #KEYS; else 0. ARGV: value, duration ms.
func scriptRedlockAcquire(h *Handler, c *call, keys, args []string) {
	ttl, ok := h.redlockTTL(c, "node-redlock acquire", keys, args)
	if !ok {
		return
	}
	if len(keys) == 1 {
		h.runStarted(c, startRedlockAcquire)
		return
	}
	_, err := h.clusterOf(c.s).AcquireAll(c.s.Context(), keys, args[0], ttl)
	if gone := c.s.Context().Err(); err == nil && gone != nil {
		// Nobody will be told of the keys, as of a lock of one key
		// (started.unlessGone): they go.
		_, _ = h.releaseEach(c.s, keys, args[0])
		err = gone
	}
	h.took(c.s, c.s.DB(), err, args[0], keys...)
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
