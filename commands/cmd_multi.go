package commands

import (
	"fmt"
	"strconv"
	"strings"
)

// Transactions: MULTI queues, EXEC runs the queue as one step. A
// transaction that only reads runs each command on its own path (each
// read is a quorum read; nothing it reads can be half-changed by it); one
// that writes becomes one generated script, run on every backend in one
// atomic step as a replicated script is, and decided the same way: by its
// effect on a majority, undone where it did not grant.
func init() {
	register(
		&command{name: "multi", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdMulti},
		&command{name: "exec", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdExec},
		&command{name: "discard", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdDiscard},
		&command{name: "watch", arity: -2, keys: keysAll, pipe: pipeBarrier, outcome: outcomePlain, notQueued: true, run: (*Handler).cmdWatch},
		&command{name: "unwatch", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdUnwatch},
	)
}

// txnState is a connection's transaction: the commands queued since
// MULTI, and whether one was refused (EXEC then aborts).
type txnState struct {
	queued []queuedCmd
	bytes  int
	failed bool
}

// A transaction's queue is bounded, so that a client cannot make the
// proxy hold an unbounded amount for it: past either bound a command is
// refused, and the transaction with it.
const (
	maxQueued      = 10000
	maxQueuedBytes = 16 << 20
)

var msgTxnTooLarge = fmt.Sprintf(msgNotSupported, "multi", fmt.Sprintf("a transaction of more than %d commands or %d MiB", maxQueued, maxQueuedBytes>>20))

// notInTxn are the commands that cannot be queued: each may write more
// than one reply (one per channel), which EXEC's array could not count.
var notInTxn = map[string]bool{"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true}

type queuedCmd struct {
	cmd  *command
	args [][]byte // the name first; a copy, the proxy reuses its buffers
}

// watchState is what WATCH keeps: the keys, tracked for their changes,
// and whether one was reported changed.
type watchState struct {
	keys  []string
	dirty bool
}

// watcher is the tracking client of a session's WATCHed keys.
type watcher struct{ s *Session }

// Invalidate marks the watched keys dirty.
func (w watcher) Invalidate([]string) {
	w.s.mu.Lock()
	if w.s.watch != nil {
		w.s.watch.dirty = true
	}
	w.s.mu.Unlock()
}

// InTransaction reports whether the connection is between MULTI and
// EXEC: its commands are queued, so a pipeline must not run them at once.
// It is read by every command, so without the lock.
func (s *Session) InTransaction() bool { return s.inTxn.Load() }

// queue queues a command of a transaction, or returns the error that
// refuses it; ok is false when s is in none.
func (s *Session) queue(cmd *command, args [][]byte) (msg string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.txn
	if t == nil {
		return "", false
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	switch {
	case notInTxn[cmd.name]:
		t.failed = true
		return fmt.Sprintf(msgNotSupported, cmd.name, "inside MULTI"), true
	case len(t.queued) >= maxQueued || t.bytes+size > maxQueuedBytes:
		t.failed = true
		return msgTxnTooLarge, true
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	t.queued = append(t.queued, queuedCmd{cmd: cmd, args: cp})
	t.bytes += size
	return "", true
}

// failTxn marks the transaction refused (a queued command was wrong), as
// Redis flags it: EXEC will answer EXECABORT.
func (s *Session) failTxn() {
	s.mu.Lock()
	if s.txn != nil {
		s.txn.failed = true
	}
	s.mu.Unlock()
}

// endTxn ends the transaction and the WATCH, returning them.
func (h *Handler) endTxn(s *Session) (*txnState, *watchState) {
	s.mu.Lock()
	t, w := s.txn, s.watch
	s.txn, s.watch = nil, nil
	s.inTxn.Store(false)
	s.mu.Unlock()
	if w != nil {
		h.tracking.Forget(watcher{s})
	}
	return t, w
}

func (h *Handler) cmdMulti(c *call) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.txn != nil {
		c.w.WriteError("ERR MULTI calls can not be nested")
		return
	}
	c.s.txn = &txnState{}
	c.s.inTxn.Store(true)
	c.w.WriteSimple("OK")
}

func (h *Handler) cmdDiscard(c *call) {
	if t, _ := h.endTxn(c.s); t == nil {
		c.w.WriteError("ERR DISCARD without MULTI")
		return
	}
	c.w.WriteSimple("OK")
}

// cmdWatch: WATCH key …. A watched key is tracked as a cached read is:
// a change of it reported by any backend before EXEC makes EXEC answer
// null, as Redis's does. The report comes after the change, within a
// backend's notice: a change made moments before EXEC may not be seen.
func (h *Handler) cmdWatch(c *call) {
	if c.s.InTransaction() {
		c.w.WriteError("ERR WATCH inside MULTI is not allowed")
		return
	}
	keys := strs(c.args)
	// The backends' first reports come before the keys are tracked.
	h.tracking.Ready()
	c.s.mu.Lock()
	if c.s.watch == nil {
		c.s.watch = &watchState{}
	}
	c.s.watch.keys = append(c.s.watch.keys, keys...)
	c.s.mu.Unlock()
	h.tracking.Begin(watcher{c.s}, keys)
	h.tracking.End(watcher{c.s}, keys)
	c.w.WriteSimple("OK")
}

func (h *Handler) cmdUnwatch(c *call) {
	c.s.mu.Lock()
	had := c.s.watch != nil
	c.s.watch = nil
	c.s.mu.Unlock()
	if had {
		h.tracking.Forget(watcher{c.s})
	}
	c.w.WriteSimple("OK")
}

func (h *Handler) cmdExec(c *call) {
	t, w := h.endTxn(c.s)
	switch {
	case t == nil:
		c.w.WriteError("ERR EXEC without MULTI")
	case t.failed:
		c.w.WriteError("EXECABORT Transaction discarded because of previous errors.")
	case w != nil && w.dirty:
		c.w.WriteNullArray()
	case !anyWrites(t.queued):
		c.w.WriteArray(len(t.queued))
		for _, q := range t.queued {
			h.dispatch(c.s, q.cmd, q.args, c.w)
		}
	default:
		for _, q := range t.queued {
			h.ownWrite(c.s, q.cmd, q.args)
		}
		h.execScript(c, t.queued)
	}
}

func anyWrites(qs []queuedCmd) bool {
	for _, q := range qs {
		if q.cmd.write {
			return true
		}
	}
	return false
}

// txnCommands are the commands a writing transaction may hold: those
// whose Redis form runs unchanged inside a replicated script.
var txnCommands = map[string]bool{
	"set": true, "get": true, "del": true, "exists": true, "pttl": true, "ttl": true,
	"pexpire": true, "expire": true,
}

// txnWords are option words kept in the generated script's text, so that
// the script check sees what kind of claim a SET makes; every other
// argument that is not a key is an ARGV, so that transactions of the same
// shape share one script.
var txnWords = map[string]bool{
	"NX": true, "XX": true, "PX": true, "EX": true, "PXAT": true, "EXAT": true,
	"GET": true, "KEEPTTL": true,
}

// execScript runs a writing transaction as one generated script: each
// command a redis.pcall (one failing command does not stop the others,
// as in EXEC), its reply one element of the script's array.
func (h *Handler) execScript(c *call, qs []queuedCmd) {
	var body strings.Builder
	var keys, argv []string
	body.WriteString("local r = {}\n")
	for i, q := range qs {
		if !txnCommands[q.cmd.name] {
			c.w.WriteError(fmt.Sprintf(msgNotSupported, "exec", "a transaction that writes may hold only GET, SET, DEL, EXISTS, PTTL, TTL, PEXPIRE and EXPIRE; '"+q.cmd.name+"' is not one"))
			return
		}
		kargs, _ := keyArgs(q.cmd.keys, q.args)
		fmt.Fprintf(&body, "r[%d] = redis.pcall(%q", i+1, strings.ToUpper(q.cmd.name))
		for j, a := range q.args[1:] {
			switch {
			case j < len(kargs):
				keys = append(keys, string(a))
				fmt.Fprintf(&body, ", KEYS[%d]", len(keys))
			case txnWords[strings.ToUpper(string(a))]:
				fmt.Fprintf(&body, ", %q", strings.ToUpper(string(a)))
			default:
				argv = append(argv, string(a))
				fmt.Fprintf(&body, ", ARGV[%d]", len(argv))
			}
		}
		body.WriteString(")\n")
	}
	body.WriteString("return r\n")
	src := body.String()
	args := [][]byte{[]byte(src), []byte(strconv.Itoa(len(keys)))}
	for _, k := range append(keys, argv...) {
		args = append(args, []byte(k))
	}
	ec := &call{s: c.s, w: c.w, name: "eval", args: args}
	h.runReplicated(ec, h.scripts.add(sha1Hex(src), src), int64(len(keys)))
}
