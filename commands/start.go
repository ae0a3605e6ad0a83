package commands

import (
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Start runs r as Run does, but a command with an asynchronous form (SET
// key token NX PX ms: the lock of redis-benchmark and of most client
// libraries) only starts here: no goroutine waits for its quorum round,
// whose last reply writes the command's reply to w and calls done. done is
// called exactly once, possibly before Start returns, and must not block;
// w must stay usable until then. Start reports false, having done
// nothing, for a request without such a form (or one Run answers with an
// error before any round: a bad arity, no login, a reserved key or value): the
// caller then Runs it. Like Run, Start keeps nothing of r.Args.
func (h *Handler) Start(s *Session, r Request, w Writer, done func()) bool {
	cmd := r.cmd
	args := r.Args
	if cmd == nil || cmd.start == nil || refusal(s, cmd, args) != "" || reservedRefusal(cmd, args) != "" ||
		s.InTransaction() || trackedKeys(s, cmd, args) != nil {
		// A transaction queues, and a tracked read keeps its books
		// until it has its answer: both in Run.
		return false
	}
	h.ownWrite(s, cmd, args)
	c, finish := h.startCall(s, cmd, args, w, done)
	if !cmd.start(h, c, finish) {
		return false
	}
	s.commandDone(cmd)
	h.stats.commands.Add(1)
	return true
}

// startCall makes the call that Start hands to a command's start, and the
// function that ends it: done, after the Observer's report when there is
// one. One allocation for the call either way, as in Run.
func (h *Handler) startCall(s *Session, cmd *command, args [][]byte, w Writer, done func()) (*call, func()) {
	o := h.opts.Observer
	if o == nil {
		return &call{s: s, w: w, name: cmd.name, args: args[1:]}, done
	}
	oc := &observedCall{call: call{s: s, name: cmd.name, args: args[1:]}, ow: outcomeWriter{Writer: w}}
	oc.w = &oc.ow
	t0 := time.Now()
	return &oc.call, func() {
		o.CommandDone(cmd.name, oc.ow.outcome(cmd), time.Since(t0))
		done()
	}
}

// startSet is SET's asynchronous form: the plain lock, SET key token NX PX
// ms (or EX s). A malformed SET is answered at once; the other forms
// (takeovers, session locks, IFEQ) are left to Run.
func (h *Handler) startSet(c *call, done func()) bool {
	o, ok := h.parseSet(c)
	if !ok {
		done()
		return true
	}
	if !o.plainLock() {
		return false
	}
	h.acquireAsync(c, c.arg(0), c.arg(1), o.ttl, false, done)
	return true
}

// startLock is LOCK's asynchronous form for a try-lock: LOCK key ttl
// [TOKEN t]. A malformed LOCK is answered at once; the other options
// (WAIT, KEEPALIVE, FENCE, OWNER and the lock kinds) keep their books on
// a worker, so they are left to Run.
func (h *Handler) startLock(c *call, done func()) bool {
	o, ok := h.parseLock(c)
	if !ok {
		done()
		return true
	}
	if !o.tryLock() {
		return false
	}
	h.acquireAsync(c, c.arg(0), o.token, o.ttl, true, done)
	return true
}

// plainLock reports whether o is SET … NX with an expiry and nothing else:
// the form that setForm leaves to acquire.
func (o setOpts) plainLock() bool {
	return o.nx && o.ttl > 0 && !o.xx && !o.keepTTL && !o.get && o.ifeq == nil
}

// acquireAsync is acquire without WAIT, for Start: the reply (SET's OK,
// or with asLock LOCK's [token, validity-ms]; or the lock error) is
// written to c.w from the goroutine of the round's deciding reply, then
// done is called. A lock won for a client that hung up
// meanwhile is released, as acquire does. One closure carries the whole
// continuation.
func (h *Handler) acquireAsync(c *call, key, token string, ttl time.Duration, asLock bool, done func()) {
	s := c.s
	if err := s.Context().Err(); err != nil {
		writeLockError(c.w, c.name, err)
		done()
		return
	}
	// The database in force at this command's place in a pipeline: a
	// SELECT is a barrier, so the commands before it are all started.
	cl := h.clusterOf(s)
	cl.AcquireAsync(key, token, ttl, func(l quorum.Lock, err error) {
		if err == nil && s.Context().Err() != nil {
			err = s.Context().Err()
			cl.ReleaseAsync(l.Key, l.Token, func(bool, error) {})
		}
		h.took(s, err, token, key)
		switch {
		case err != nil:
			writeLockError(c.w, c.name, err)
		case asLock:
			h.writeGrant(c, grant{Lock: l}, false, 0)
		default:
			c.w.WriteSimple("OK")
		}
		done()
	})
}

// startUnlock is UNLOCK's asynchronous form (and DELIFEQ's, the same
// release): the compare-and-delete of a plain lock.
func (h *Handler) startUnlock(c *call, done func()) bool {
	return h.releaseAsync(c, c.arg(0), c.arg(1), done)
}

// startEval is EVAL's asynchronous form, for a recognised release script
// (lockScript.release).
func (h *Handler) startEval(c *call, done func()) bool {
	if !releaseShape(c) {
		return false
	}
	if s := scripts[sha1Hex(c.arg(0))]; s == nil || !s.release {
		return false
	}
	return h.releaseAsync(c, c.arg(2), c.arg(3), done)
}

// startEvalSHA is EVALSHA's asynchronous form. A SHA1 spelled in upper
// case is left to Run, which lowers it: clients send it as Redis names it.
func (h *Handler) startEvalSHA(c *call, done func()) bool {
	if !releaseShape(c) {
		return false
	}
	if s := scripts[string(c.args[0])]; s == nil || !s.release {
		return false
	}
	return h.releaseAsync(c, c.arg(2), c.arg(3), done)
}

// releaseShape reports whether c is script numkeys=1 key token: the only
// call of a release script that is not answered with an argument error.
func releaseShape(c *call) bool {
	return len(c.args) == 4 && string(c.args[1]) == "1"
}

// releaseAsync is releaseToken without a worker, for Start, where it is
// simply the quorum's release: the token is not an OWNER token, and no
// lock of this proxy is kept (renewed) or known lost under it. The other
// cases keep their books (hold counts, bindings) on the worker: it
// reports false for them, having done nothing.
func (h *Handler) releaseAsync(c *call, key, token string, done func()) bool {
	s := c.s
	if quorum.IsOwnerToken(token) {
		return false
	}
	ref := lockRef{s.DB(), key, token}
	if h.bound.wasLost(ref, s.ID) || h.bound.get(ref) != nil {
		return false
	}
	h.clusterOf(s).ReleaseAsync(key, token, func(ok bool, err error) {
		writeReleased(c.w, c.name, ok, err)
		done()
	})
	return true
}
