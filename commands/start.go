package commands

import (
	"context"
	"errors"
	"slices"
	"sync"
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
	st := h.startCall(s, cmd, args, w, done)
	if !cmd.start(h, st) {
		st.free()
		return false
	}
	// st may be back in the pool already: only cmd from here.
	s.commandDone(cmd)
	h.stats.commands.Add(1)
	return true
}

// started is a command that Start began: its call, what ends it (the
// caller's done, and the Observer's outcome and clock) and the
// continuations it hands the quorum. It comes from a pool and goes back
// once the command ended, so that a request allocates none of it.
//
// With an Observer, st is its round's quorum.Reporter: the round's
// report comes before the quorum's continuation, and stays valid until
// the continuation returns, so end reports the command once, with its
// round, in one CommandDone. Nothing uses st once it is back: the quorum
// calls a continuation and a Reporter once each, on the same goroutine.
type started struct {
	observedCall // its ow watches the reply where there is an Observer
	h            *Handler
	cmd          *command
	o            Observer // nil: no report
	done         func()
	t0           time.Time

	// The lock acquireAsync asks for, and for LOCK what its options add
	// once it is granted.
	cl         *quorum.Cluster
	key, token string
	kind       quorum.CmdKind
	owner      string // LOCK … OWNER's id: one hold of its lock
	permits    int    // LOCK … PERMITS n: one of the n permits
	// LOCK … WAIT: until when the wait runs (zero: no wait, or no more).
	waitUntil        time.Time
	ttl              time.Duration
	form             replyForm // what it answers (see reply)
	fence, keepalive bool
	session          bool  // with keepalive: a session lock (SET NX without an expiry)
	err              error // told once an undo's release is done

	round *quorum.Report // the round's report, told before end

	// The methods the quorum calls back, bound once per started: the
	// first two at once, the others when first needed.
	acquired, fenced, renewed func(quorum.Lock, error)
	released, undone          func(bool, error)
	held                      func(quorum.Reentered, error)
}

var startedPool sync.Pool // of *started

// getStarted is a started from the pool, or a new one.
func getStarted() *started {
	if st, ok := startedPool.Get().(*started); ok {
		return st
	}
	st := &started{}
	st.acquired, st.released = st.onAcquired, st.onReleased
	return st
}

// startCall makes the call that Start hands to a command's start: its
// reply goes through the outcome's writer when there is an Observer.
func (h *Handler) startCall(s *Session, cmd *command, args [][]byte, w Writer, done func()) *started {
	st := getStarted()
	st.call = call{s: s, w: w, name: cmd.name, args: args[1:]}
	st.h, st.cmd, st.done, st.o = h, cmd, done, h.opts.Observer
	if st.o != nil {
		st.ow = outcomeWriter{Writer: w}
		st.w = &st.ow
	}
	return st
}

// reporter is the Reporter of st's round: st itself, which reports it
// with the command, when there is an Observer and the command ends in
// the round's continuation; else none (the cluster's Observer is told of
// the round). A LOCK with FENCE, KEEPALIVE or WAIT may end later, from
// another round or a goroutine, after the round's report is gone (see
// Reporter).
func (st *started) reporter() quorum.Reporter {
	switch {
	case st.o == nil:
		return nil
	case st.fence || st.keepalive || !st.waitUntil.IsZero():
		st.timeFromHere()
		return nil
	}
	return st
}

// timeFromHere starts the clock of a command whose rounds are not
// reported with it (see end), once.
func (st *started) timeFromHere() {
	if st.o != nil && st.t0.IsZero() {
		st.t0 = time.Now()
	}
}

// end ends the command, once its reply is written: the Observer's
// report, with the round's when there was one, then done.
func (st *started) end() {
	done := st.done
	if st.o != nil {
		// A command with a round lasted as long as the round: its
		// decision read the clock, and the reply went out at once. One
		// whose rounds are not reported with it is timed from where it
		// handed itself on (timeFromHere); one answered at once, with
		// no round, took no time worth a clock reading.
		var d time.Duration
		switch {
		case st.round != nil:
			d = st.round.D
		case !st.t0.IsZero():
			d = time.Since(st.t0)
		}
		st.o.CommandDone(st.name, st.ow.outcome(st.cmd), d, st.round)
	}
	st.free()
	done()
}

// RoundDone implements quorum.Reporter: the round's report, kept for end.
func (st *started) RoundDone(rep *quorum.Report) { st.round = rep }

// keepRound copies the round's report for an end that comes after the
// round's continuation has returned, when the round's own is gone (see
// quorum.Reporter).
func (st *started) keepRound() {
	if st.round != nil {
		rep := *st.round
		rep.Calls = slices.Clone(rep.Calls)
		st.round = &rep
	}
}

// free puts st back in the pool, keeping nothing of its request.
func (st *started) free() {
	acquired, fenced, renewed, released, undone, held := st.acquired, st.fenced, st.renewed, st.released, st.undone, st.held
	*st = started{}
	st.acquired, st.fenced, st.renewed, st.released, st.undone, st.held = acquired, fenced, renewed, released, undone, held
	startedPool.Put(st)
}

// runStarted runs c's command in its asynchronous form, start (which
// must take it), and waits until it has ended: Run's form of a command
// whose one statement is its asynchronous one. Run reports the command;
// its rounds are reported to the cluster's Observer.
func (h *Handler) runStarted(c *call, start func(*Handler, *started) bool) {
	done := make(chan struct{})
	st := getStarted()
	st.call, st.h, st.done = *c, h, func() { close(done) }
	if !start(h, st) {
		panic("commands: runStarted of a command its start leaves to Run")
	}
	<-done
}

// runAcquire is Run's plain lock of c's key and token for ttl (SET …
// NX PX, or with session a session lock, bound to the connection):
// acquireAsync waited for.
func (h *Handler) runAcquire(c *call, ttl time.Duration, session bool) {
	h.runStarted(c, func(h *Handler, st *started) bool {
		st.keepalive, st.session = session, session
		key, token := st.argPair(0, 1)
		h.acquireAsync(st, quorum.SetNX, key, token, ttl, replyOK)
		return true
	})
}

// startSet is SET's asynchronous form: the plain lock, SET key token NX PX
// ms (or EX s). A malformed SET is answered at once; the other forms
// (takeovers, session locks, IFEQ) are left to Run.
func (h *Handler) startSet(st *started) bool {
	o, ok := h.parseSet(&st.call)
	if !ok {
		st.end()
		return true
	}
	if !o.plainLock() {
		return false
	}
	key, token := st.argPair(0, 1)
	h.acquireAsync(st, quorum.SetNX, key, token, o.ttl, replyOK)
	return true
}

// startLock is LOCK's asynchronous form, LOCK key ttl [TOKEN t | OWNER
// id] [SHARED | FAIR | PERMITS n] [FENCE] [KEEPALIVE] [WAIT ms]: its
// rounds (a semaphore's read of its free slots, the rounds of the lock,
// the fence's) run one from the other's last reply. A WAIT whose first
// round is refused waits on a goroutine of its own (see waitOn). A
// malformed LOCK is answered at once.
func (h *Handler) startLock(st *started) bool {
	o, ok := h.parseLock(&st.call)
	if !ok {
		st.end()
		return true
	}
	kind, token := quorum.SetNX, o.token
	switch {
	case o.shared:
		kind, token = quorum.AcquireShared, quorum.NewSharedToken()
	case o.fair:
		kind = quorum.FairAcquire
	}
	st.kind, st.fence, st.keepalive, st.owner, st.permits = kind, o.fence, o.keepalive, o.owner, o.permits
	if o.wait > 0 {
		st.waitUntil = time.Now().Add(o.wait)
	}
	h.acquireAsync(st, kind, o.key, token, o.ttl, replyGrant)
	return true
}

// plainLock reports whether o is SET … NX with an expiry and nothing else:
// the form that setForm leaves to acquire.
func (o setOpts) plainLock() bool {
	return o.nx && o.ttl > 0 && !o.xx && !o.keepTTL && !o.get && o.ifeq == nil
}

// acquireAsync is acquire's first round, for Start, of a lock of kind
// (see quorum.Cluster.AcquireAsync), or with st.owner one hold of the
// owner's lock, or with st.permits a permit (a WAIT goes on from it, see
// waitOn): the reply in form (or the lock error) is written to st.w from
// the goroutine of the deciding reply, then st ends. A lock won for a
// client that hung up meanwhile is released, as acquire does.
func (h *Handler) acquireAsync(st *started, kind quorum.CmdKind, key, token string, ttl time.Duration, form replyForm) {
	s := st.s
	if err := s.Context().Err(); err != nil {
		writeLockError(st.w, st.name, err)
		st.end()
		return
	}
	// The database in force at this command's place in a pipeline: a
	// SELECT is a barrier, so the commands before it are all started.
	st.cl, st.key, st.token, st.ttl, st.form = h.clusterOf(s), key, token, ttl, form
	switch {
	case st.owner != "":
		if st.held == nil {
			st.held = st.onHeld
		}
		st.timeFromHere()
		st.cl.LockOwnerAsync(s.Context(), key, st.owner, ttl, st.held)
		return
	case st.permits > 0:
		st.timeFromHere()
		st.cl.AcquirePermitAsync(key, st.permits, ttl, st.acquired)
		return
	}
	st.cl.AcquireAsync(st.reporter(), kind, key, token, ttl, st.acquired)
}

// onHeld is the continuation of LOCK … OWNER's hold: a lock as any other
// from here, its token the owner's.
func (st *started) onHeld(r quorum.Reentered, err error) { st.onAcquired(r.Lock, err) }

// onAcquired is acquireAsync's continuation.
func (st *started) onAcquired(l quorum.Lock, err error) {
	s := st.s
	if !st.waitUntil.IsZero() && retried(err) && s.Context().Err() == nil {
		st.h.stats.blocked.Add(1) // until waitOn ends
		go st.waitOn(err)
		return
	}
	err = st.unlessGone(l, err)
	st.h.took(s, st.cl.Index(), err, l.Token, st.key)
	if err == nil && st.fence {
		if st.fenced == nil {
			st.fenced = st.onFenced
		}
		st.cl.FenceAsync(l, st.fenced)
		return
	}
	st.granted(l, err)
}

// retried reports whether a LOCK … WAIT goes on after a first round that
// failed with err: contention, fair waiters queued, or too few backends
// answering, as the quorum's wait retries them.
func retried(err error) bool {
	var nq *quorum.NoQuorumError
	return err == quorum.ErrNotAcquired || err == quorum.ErrQueued || errors.As(err, &nq)
}

// waitOn is the rest of a LOCK … WAIT whose first round was refused
// with tried: the quorum's blocking acquire of its kind, from where that
// round left it (quorum.Tried), until the wait's end. It runs on a
// goroutine of its own: waiting is what it does, and until it ends the
// command counts among the blocked clients (onAcquired counted it).
func (st *started) waitOn(tried error) {
	left := time.Until(st.waitUntil)
	st.waitUntil = time.Time{}
	if left <= 0 {
		st.h.stats.blocked.Add(-1)
		st.onAcquired(quorum.Lock{}, tried)
		return
	}
	ctx, cl, opts := st.s.Context(), st.cl, []quorum.Option{quorum.Wait(left), quorum.Tried(tried)}
	var l quorum.Lock
	var err error
	switch {
	case st.owner != "":
		var r quorum.Reentered
		r, err = cl.LockOwner(ctx, st.key, st.owner, st.ttl, opts...)
		l = r.Lock
	case st.permits > 0:
		l, err = cl.AcquirePermit(ctx, st.key, st.permits, st.ttl, opts...)
	case st.kind == quorum.AcquireShared:
		l, err = cl.AcquireShared(ctx, st.key, st.ttl, opts...)
	case st.kind == quorum.FairAcquire:
		l, err = cl.AcquireFair(ctx, st.key, st.token, st.ttl, opts...)
	default:
		l, err = cl.Acquire(ctx, st.key, st.token, st.ttl, opts...)
	}
	st.h.stats.blocked.Add(-1)
	st.onAcquired(l, err)
}

// onFenced is the continuation of LOCK … FENCE's fence: a lock whose
// fence failed is released before the error is told, as Run's fence
// does.
func (st *started) onFenced(l quorum.Lock, err error) {
	if err == nil {
		st.granted(l, st.unlessGone(l, nil))
		return
	}
	st.undo(l, fenceError(err))
}

// unlessGone is err, the outcome of a round that granted l when it is
// nil, unless the client hung up meanwhile: nobody will be told of the
// lock, which goes, unwaited for, and the reason is the connection's end.
func (st *started) unlessGone(l quorum.Lock, err error) error {
	if err != nil {
		return err
	}
	if gone := st.s.Context().Err(); gone != nil {
		st.drop(l)
		return gone
	}
	return nil
}

// undo releases l, which the client will not be told of, and then
// tells it err.
func (st *started) undo(l quorum.Lock, err error) {
	if st.undone == nil {
		st.undone = st.onUndone
	}
	st.err = err
	st.letGo(l, st.undone)
}

// drop is undo that does not wait for the release: for a client that is
// gone, whose reply nobody reads.
func (st *started) drop(l quorum.Lock) { st.letGo(l, func(bool, error) {}) }

// letGo releases l and then calls then. An owner's hold is dropped by
// Unhold, which waits: on a goroutine of its own, as only a failed fence
// or a client gone in the moment of its grant needs it.
func (st *started) letGo(l quorum.Lock, then func(bool, error)) {
	cl := st.cl
	if quorum.IsOwnerToken(l.Token) {
		go func() {
			_, _, _ = cl.Unhold(context.Background(), l.Key, l.Token)
			then(false, nil)
		}()
		return
	}
	cl.ReleaseAsync(nil, l.Key, l.Token, then)
}

// onUndone is undo's continuation.
func (st *started) onUndone(bool, error) { st.reply(quorum.Lock{}, st.err) }

// granted writes the reply of a lock's round (and fence), binding a
// KEEPALIVE lock to its connection first. Where the binding must wait (a
// lock bound already, whose keeper may be renewing it) that is left to a
// goroutine of its own: a round's continuation runs on a backend's
// reader, which the renewal waits for.
func (st *started) granted(l quorum.Lock, err error) {
	if err == nil && st.keepalive {
		kind := bindKeepalive
		if st.session {
			kind = bindSession
		}
		again, gone := st.h.tie(st.s, lockRef{st.cl.Index(), l.Key, l.Token}, st.ttl, l.Validity, kind)
		switch {
		case gone:
			st.undo(l, st.s.Context().Err())
			return
		case again != nil:
			go func() {
				again.kept.Granted(l.Validity)
				st.reply(l, nil)
			}()
			return
		}
	}
	st.reply(l, err)
}

// replyForm is what a started lock or renewal answers.
type replyForm int

const (
	replyOK       replyForm = iota // SET's OK
	replyGrant                     // LOCK's [token, validity-ms] (with FENCE, the fence too)
	replyValidity                  // RENEW's validity-ms
	replyBool                      // a library script's 1, or 0 where refused
)

// reply writes a started lock's or renewal's reply, in st.form, and
// ends it.
func (st *started) reply(l quorum.Lock, err error) {
	switch {
	case st.form == replyBool:
		st.h.writeScriptBool(&st.call, err)
	case err != nil:
		writeLockError(st.w, st.name, err)
	case st.form == replyGrant:
		writeGrant(st.w, l, st.fence)
	case st.form == replyValidity:
		st.w.WriteInt(truncMillis(l.Validity))
	default:
		st.w.WriteSimple("OK")
	}
	st.end()
}

// startUnlock is UNLOCK's asynchronous form (and DELIFEQ's, the same
// release): the compare-and-delete of a plain lock.
func (h *Handler) startUnlock(st *started) bool {
	return h.releaseAsync(st, 0, 1)
}

// startEval is EVAL's asynchronous form, for a recognised script with
// one (see lockScript.start).
func (h *Handler) startEval(st *started) bool {
	return oneKey(&st.call) && h.startScript(st, scriptBodies[string(st.args[0])])
}

// startEvalSHA is EVALSHA's asynchronous form. A SHA1 spelled in upper
// case is left to Run, which lowers it: clients send it as Redis names it.
func (h *Handler) startEvalSHA(st *started) bool {
	return oneKey(&st.call) && h.startScript(st, scripts[string(st.args[0])])
}

// oneKey reports whether c is script numkeys=1 key and arguments: the
// only calls of the scripts with an asynchronous form that it may take.
func oneKey(c *call) bool {
	return len(c.args) >= 3 && string(c.args[1]) == "1"
}

// startScript starts s, the script that st's EVAL or EVALSHA names, in
// its asynchronous form where it has one; else it leaves st to Run.
func (h *Handler) startScript(st *started, s *lockScript) bool {
	return s != nil && s.start != nil && s.start(h, st)
}

// startRelease is a release script's asynchronous form, UNLOCK's, for
// script numkeys=1 key token; another shape is left to Run, which answers
// it with its argument error.
func startRelease(h *Handler, st *started) bool {
	return len(st.args) == 4 && h.releaseAsync(st, 2, 3)
}

// startExtend is an extend script's asynchronous form, RENEW's, for
// script numkeys=1 key token ms (extendScript).
func startExtend(h *Handler, st *started) bool {
	return len(st.args) == 5 && h.renewAsync(st, 2, 3, 4, replyBool, false)
}

// startRedisPyExtend is redis-py's extend in its asynchronous form, for
// script numkeys=1 key token ms replace: with replace "0" the ms are
// added to the ttl left (up to max-ttl), else they replace it, as
// scriptRedisPyExtend does. An OWNER token is left to Run, which refuses
// its add.
func startRedisPyExtend(h *Handler, st *started) bool {
	switch {
	case len(st.args) != 6:
		return false
	case string(st.args[5]) != "0":
		return h.renewAsync(st, 2, 3, 4, replyBool, false)
	case quorum.IsOwnerToken(string(st.args[3])):
		return false
	}
	return h.renewAsync(st, 2, 3, 4, replyBool, true)
}

// releaseAsync is releaseToken without a worker, for Start, of the key
// and token that st's arguments keyArg and tokenArg name, where it is
// simply the quorum's release: the token is not an OWNER token, and no
// lock of this proxy is kept (renewed) or known lost under it. The other
// cases keep their books (hold counts, bindings) on the worker: it
// reports false for them, having done nothing.
func (h *Handler) releaseAsync(st *started, keyArg, tokenArg int) bool {
	s := st.s
	key, token := st.argPair(keyArg, tokenArg)
	if quorum.IsOwnerToken(token) {
		return false
	}
	ref := lockRef{s.DB(), key, token}
	if h.bound.wasLost(ref, s.ID) || h.bound.get(ref) != nil {
		return false
	}
	h.clusterOf(s).ReleaseAsync(st.reporter(), key, token, st.released)
	return true
}

// onReleased is releaseAsync's continuation.
func (st *started) onReleased(ok bool, err error) {
	writeReleased(st.w, st.name, ok, err)
	st.end()
}

// startRenew is RENEW's asynchronous form: RENEW key token ttl.
func (h *Handler) startRenew(st *started) bool {
	return h.renewAsync(st, 0, 1, 2, replyValidity, false)
}

// renewAsync is renewToken without a worker, for Start, of the key, token
// and ttl in milliseconds that st's arguments keyArg, tokenArg and ttlArg
// name, answered in form; with add the ttl is added to the one left (up
// to max-ttl), else it replaces it. Where renewToken keeps books (a
// lock of this proxy kept or known lost under the token) it reports
// false, having done nothing, for the worker to run.
func (h *Handler) renewAsync(st *started, keyArg, tokenArg, ttlArg int, form replyForm, add bool) bool {
	s := st.s
	key, token := st.argPair(keyArg, tokenArg)
	ref := lockRef{s.DB(), key, token}
	if h.bound.wasLost(ref, s.ID) || h.bound.get(ref) != nil {
		return false
	}
	ttl, ok := h.ttlArg(&st.call, st.arg(ttlArg), time.Millisecond)
	if !ok {
		st.end()
		return true
	}
	// The database in force at this command's place in a pipeline (see
	// acquireAsync), kept for the continuation.
	st.cl, st.key, st.token, st.form = h.clusterOf(s), key, token, form
	if st.renewed == nil {
		st.renewed = st.onRenewed
	}
	if add {
		st.cl.ExtendAddAsync(st.reporter(), key, token, ttl, h.opts.MaxTTL, st.renewed)
	} else {
		st.cl.RenewAsync(st.reporter(), key, token, ttl, st.renewed)
	}
	return true
}

// onRenewed is renewAsync's continuation. A lock that a connection bound
// meanwhile is told of the validity, as renewToken tells it: on a
// goroutine of its own, since its keeper may be renewing it and the
// renewal waits for the backend reader this runs on.
func (st *started) onRenewed(l quorum.Lock, err error) {
	if b := st.h.bound.get(lockRef{st.cl.Index(), st.key, st.token}); err == nil && b != nil {
		st.keepRound()
		go func() {
			b.kept.Granted(l.Validity)
			st.reply(l, nil)
		}()
		return
	}
	st.reply(l, err)
}
