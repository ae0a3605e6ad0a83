package commands

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// lockOpts are the options of LOCK key ttl [WAIT ms] [TOKEN t]
// [KEEPALIVE] [FENCE] [OWNER id] [SHARED | PERMITS n] [FAIR].
type lockOpts struct {
	key   string // the lock's key, as keptStrings keeps it with token
	ttl   time.Duration
	wait  time.Duration
	token string
	owner string
	// keepalive binds the lock to the connection (renewed while it lives).
	keepalive bool
	// fence adds a fencing token to the reply.
	fence bool
	// shared asks for a read lock; permits (> 0) for one of n permits of
	// a semaphore; fair for a place in the key's queue of waiters.
	shared  bool
	permits int
	fair    bool
}

// parseLock reads LOCK's options in any order, case-insensitively; an
// unknown or repeated option is a syntax error.
func (h *Handler) parseLock(c *call) (lockOpts, bool) {
	var o lockOpts
	ttl, ok := h.ttlArg(c, c.arg(1), time.Millisecond)
	if !ok {
		return o, false
	}
	o.ttl = ttl
	opts, bad := scanLockOptions(c.args[2:], h.opts.MaxWait)
	if bad != "" {
		c.w.WriteError(bad)
		return o, false
	}
	o.wait, o.keepalive, o.fence = opts.wait, opts.keepalive, opts.fence
	o.owner = string(opts.owner)
	o.shared, o.permits, o.fair = opts.shared, opts.permits, opts.fair
	// A lock that names no holder gets a fresh token; SHARED and
	// PERMITS choose theirs when they ask.
	if len(opts.token) == 0 && o.owner == "" && !o.shared && o.permits == 0 {
		o.key, o.token = c.s.kept.withToken(c.args[0])
	} else {
		o.key, o.token = c.s.kept.pair(c.args[0], opts.token)
	}
	return o, h.lockOptsValid(c, &o)
}

// lockOptions is what LOCK's options say, as written. parseLock and
// lockWaits (the proxy's "may this LOCK block?") both read them with
// scanLockOptions, so that the two never disagree.
type lockOptions struct {
	wait                           time.Duration
	token, owner                   []byte // nil: not given
	keepalive, fence, shared, fair bool
	permits                        int // 0: not given
}

// maxPermits bounds PERMITS n: each node keeps and scans one slot per
// permit.
const maxPermits = quorum.MaxPermits

var msgBadPermits = fmt.Sprintf("ERR PERMITS must be an integer from 1 to %d", maxPermits)

// LOCK's option words, as bits of the set of those seen.
const (
	optWait = 1 << iota
	optToken
	optOwner
	optKeepalive
	optFence
	optShared
	optPermits
	optFair
)

// scanLockOptions reads LOCK's options (the arguments after key and ttl):
// [WAIT ms] [TOKEN t] [KEEPALIVE] [FENCE] [OWNER id], in any order, the
// words in any case. It returns the error reply of the first option that
// is unknown, repeated, lacks its value or has a bad one (WAIT over
// maxWait among them), or "" when all are good. It allocates nothing: the
// proxy asks it of every pipelined LOCK with a WAIT.
func scanLockOptions(args [][]byte, maxWait time.Duration) (lockOptions, string) {
	var o lockOptions
	seen := 0
	for i := 0; i < len(args); i++ {
		opt := lockOptionWord(args[i])
		if opt == 0 || seen&opt != 0 {
			return o, msgSyntax
		}
		seen |= opt
		switch opt {
		case optKeepalive:
			o.keepalive = true
			continue
		case optFence:
			o.fence = true
			continue
		case optShared:
			o.shared = true
			continue
		case optFair:
			o.fair = true
			continue
		}
		if i++; i >= len(args) {
			return o, msgSyntax
		}
		if bad := o.setValue(opt, args[i], maxWait); bad != "" {
			return o, bad
		}
	}
	return o, ""
}

// setValue sets the value v of WAIT, PERMITS, TOKEN or OWNER.
func (o *lockOptions) setValue(opt int, v []byte, maxWait time.Duration) string {
	if opt == optPermits {
		n, ok := parseIntBytes(v)
		switch {
		case !ok:
			return msgNotInt
		case n < 1 || n > maxPermits:
			return msgBadPermits
		}
		o.permits = int(n)
		return ""
	}
	if opt == optWait {
		n, ok := parseIntBytes(v)
		switch {
		case !ok || n < 0 || n > math.MaxInt64/int64(time.Millisecond):
			return msgNotInt
		case time.Duration(n)*time.Millisecond > maxWait:
			return msgWaitTooLarge
		}
		o.wait = time.Duration(n) * time.Millisecond
		return ""
	}
	if len(v) == 0 {
		return msgSyntax
	}
	if opt == optToken {
		o.token = v
	} else {
		o.owner = v
	}
	return ""
}

// lockOptionWord is the option a word names, in any ASCII case (as Redis
// compares option words), or 0.
func lockOptionWord(w []byte) int {
	switch {
	case asciiEqualFold(w, "WAIT"):
		return optWait
	case asciiEqualFold(w, "TOKEN"):
		return optToken
	case asciiEqualFold(w, "OWNER"):
		return optOwner
	case asciiEqualFold(w, "KEEPALIVE"):
		return optKeepalive
	case asciiEqualFold(w, "FENCE"):
		return optFence
	case asciiEqualFold(w, "SHARED"):
		return optShared
	case asciiEqualFold(w, "PERMITS"):
		return optPermits
	case asciiEqualFold(w, "FAIR"):
		return optFair
	}
	return 0
}

// asciiEqualFold compares b with the upper-case word up, ignoring ASCII case.
func asciiEqualFold(b []byte, up string) bool {
	if len(b) != len(up) {
		return false
	}
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != up[i] {
			return false
		}
	}
	return true
}

func (h *Handler) lockOptsValid(c *call, o *lockOpts) bool {
	if bad := lockKindsExclude(o); bad != "" {
		c.w.WriteError(fmt.Sprintf(msgNotSupported, "lock", bad))
		return false
	}
	return true
}

// lockKindsExclude names the first pair of LOCK's options that o combines
// and redlockd does not support together, or "".
func lockKindsExclude(o *lockOpts) string {
	switch {
	case o.owner != "" && o.token != "":
		return "TOKEN and OWNER exclude each other: an owner's token is chosen by the proxy"
	case o.shared && o.permits > 0:
		return "SHARED and PERMITS exclude each other: a key is a read-write lock or a semaphore"
	case o.owner != "" && (o.shared || o.permits > 0 || o.fair):
		return "OWNER (a reentrant exclusive lock) with SHARED, PERMITS or FAIR"
	case o.token != "" && (o.shared || o.permits > 0):
		return "TOKEN with SHARED or PERMITS: each holder's token is chosen by the proxy"
	case o.fair && (o.shared || o.permits > 0):
		return "FAIR with SHARED or PERMITS: the fair queue is for exclusive locks"
	case quorum.IsPermitToken(o.token):
		return "TOKEN permit:…: tokens of that form name a slot of LOCK … PERMITS and are chosen by the proxy"
	}
	return ""
}

// cmdLock: LOCK key ttl [options] -> [token, validity-ms] (with FENCE:
// [token, validity-ms, fence]) or null. Run's LOCK is its asynchronous
// form (startLock), waited for: one statement of every LOCK.
func (h *Handler) cmdLock(c *call) { h.runStarted(c, (*Handler).startLock) }

// writeGrant writes a granted LOCK's reply: [token, validity-ms], with
// FENCE [token, validity-ms, fence].
func writeGrant(w Writer, l quorum.Lock, withFence bool) {
	if withFence {
		w.WriteArray(3)
	} else {
		w.WriteArray(2)
	}
	w.WriteBulkString(l.Token)
	w.WriteInt(truncMillis(l.Validity))
	if withFence {
		w.WriteInt(l.Fence)
	}
}

// fenceError is the error a LOCK … FENCE whose fence failed answers: a
// later holder that fenced meanwhile took the lock.
func fenceError(err error) error {
	if errors.Is(err, quorum.ErrFenceOvertaken) {
		return quorum.ErrNotAcquired
	}
	return err
}

// releaseToken is UNLOCK (and every library's compare-and-delete) from
// session s: it drops one hold of an owner lock (one of s's kept holds
// first; renewal goes on while kept holds remain) and releases anything
// else, stopping its renewal. A kept lock that was lost answers false.
func (h *Handler) releaseToken(s *Session, key, token string) (bool, error) {
	return h.releaseTokenWith(s, key, token, h.clusterOf(s).Release)
}

// releaseTokenWith is releaseToken whose release of a lock without holds
// is release (a library's script may need more than a yes or no from the
// round): every release of one key by its token keeps the same books.
func (h *Handler) releaseTokenWith(s *Session, key, token string, release func(context.Context, string, string) (bool, error)) (bool, error) {
	// Waited for to its end even when the client hangs up: the books
	// below (an owner's share of a kept lock, its renewals paused
	// meanwhile) follow the release's outcome.
	ctx := s.Unbound()
	ref := lockRef{s.DB(), key, token}
	if h.bound.wasLost(ref, s.ID) {
		if !quorum.IsOwnerToken(token) {
			_, _ = h.clusterOf(s).Release(ctx, key, token) // a minority may still store it
		}
		// An owner lock's token may carry holds that other connections
		// (on other proxies) still renew: it is left to them or its ttl.
		return false, nil
	}
	b := h.bound.get(ref)
	if !quorum.IsOwnerToken(token) {
		if b != nil {
			h.unbind(b)
		}
		return release(ctx, key, token)
	}
	if b == nil {
		ok, _, err := h.clusterOf(s).Unhold(ctx, key, token)
		return ok, err
	}
	var ok bool
	var err error
	b.kept.While(func() bool {
		var left int64
		ok, left, err = h.clusterOf(s).Unhold(ctx, key, token)
		return h.unholdShare(b, s.ID, err == nil && left == 0)
	})
	return ok, err
}

// unholdShare books an UNLOCK by session id of one hold of b's owner lock:
// one of id's kept holds, if it has any, stops being renewed. It reports
// whether b's renewal ends: the lock is free, or no kept hold is left.
func (h *Handler) unholdShare(b *binding, id int64, free bool) bool {
	r := &h.bound
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.holds[id] > 0 {
		if b.holds[id]--; b.holds[id] == 0 {
			delete(b.holds, id)
			r.unindex(b, id)
		}
	}
	if !free && b.total() > 0 {
		return false
	}
	r.remove(b)
	return true
}

// renewToken is RENEW from session s: an owner lock's hold count is
// extended with it; a kept lock that s lost is not held; a kept lock's
// renewals keep at least the validity it reports.
func (h *Handler) renewToken(s *Session, key, token string, ttl time.Duration) (time.Duration, error) {
	ref := lockRef{s.DB(), key, token}
	if h.bound.wasLost(ref, s.ID) {
		return 0, quorum.ErrNotHeld
	}
	v, err := h.clusterOf(s).Renew(s.Context(), key, token, ttl)
	h.extended(s, v, err, token, key)
	return v, err
}

// sessionSet takes a session lock: SET key value NX (force: without NX)
// and no expiry. It lives on the backends with the session ttl and is kept
// while the connection lives.
func (h *Handler) sessionSet(c *call, force bool) {
	if !force {
		h.runAcquire(c, h.opts.SessionTTL, true)
		return
	}
	key, token, ttl := c.arg(0), c.arg(1), h.opts.SessionTTL
	l, err := h.clusterOf(c.s).ForceSet(c.s.Context(), key, token, ttl)
	h.took(c.s, c.s.DB(), err, token, key)
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	h.bind(c.s, key, token, ttl, l.Validity, bindSession)
	c.w.WriteSimple("OK")
}

// sessionPTTL makes hd report "no expiry" when it is a session lock.
func (h *Handler) sessionPTTL(s *Session, key string, hd *quorum.Holder) {
	if hd.Held && h.isSessionLock(s, key, hd.Token) {
		hd.PTTL = -1
	}
}
