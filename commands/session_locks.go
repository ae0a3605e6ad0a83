package commands

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Locks bound to a connection: LOCK … KEEPALIVE and session locks (SET
// without an expiry). The proxy renews each every third of its ttl while a
// connection that took it lives. The registry is proxy-wide, so that
// PTTL/TTL can tell a session lock (-1, as Redis answers for a key without
// expiry) from a lock with a ttl; a second proxy in front of the same
// backends does not know it and answers the backend ttl.
//
// A hold belongs to the connection that took it. An owner lock (LOCK …
// OWNER) has one token for every hold of its owner, on any connection, so
// one binding per lock counts the kept holds of each connection: closing
// a connection (or RESET) drops exactly its own kept holds, one Unhold
// each, and renewal runs while any kept hold lives. A hold taken without
// KEEPALIVE belongs to nobody here: it lives by its ttl, RENEW and UNLOCK.

// lockRef names a lock bound to a connection: its database, key and
// token. The same key in two databases is two locks.
type lockRef struct {
	db         int
	key, token string
}

type bindKind int

const (
	bindKeepalive bindKind = iota
	// bindSession is a lock the client took without an expiry.
	bindSession
)

type binding struct {
	ref  lockRef
	kind bindKind
	kept *quorum.Kept
	// holds counts the kept holds of each connection (session ID); always
	// 1 for a lock without hold counts. Under bindings.mu.
	holds map[int64]int
}

// total is the number of kept holds; the caller holds bindings.mu.
func (b *binding) total() int {
	n := 0
	for _, c := range b.holds {
		n += c
	}
	return n
}

// bindings is the registry of connection-bound locks. Its zero value is
// ready to use.
type bindings struct {
	mu        sync.Mutex
	byRef     map[lockRef]*binding
	bySession map[int64]map[lockRef]*binding
	// lost remembers kept locks whose renewal failed, until their ttl has
	// passed, so that RENEW/UNLOCK on them answer "not held" even if a
	// minority of backends still stores the token.
	lost map[lockRef]lostLock
	// nrecords is len(lost), so that took and wasLost, which run for every
	// LOCK and GET, take r.mu only when some lock was lost at all.
	nrecords atomic.Int64

	held  atomic.Int64 // live connection-bound locks
	nlost atomic.Int64 // kept locks lost, since start
}

// lostLock is the record of a lost kept lock: until when it is kept, and
// for an owner lock the connections whose kept holds were lost. Only they
// are answered "not held": another hold of the same owner (taken without
// KEEPALIVE, or renewed by another proxy) lives on by its own validity.
type lostLock struct {
	until time.Time
	only  map[int64]bool // nil: every connection
}

// KeepaliveStats are the counters of connection-bound locks, for INFO and
// metrics: Held is how many are live now, Lost how many were lost since
// start because their validity ran out without a renewal that reached a
// majority.
type KeepaliveStats struct {
	Held, Lost int64
}

// KeepaliveStats reads the counters of connection-bound locks.
func (h *Handler) KeepaliveStats() KeepaliveStats {
	return KeepaliveStats{Held: h.bound.held.Load(), Lost: h.bound.nlost.Load()}
}

// bind ties one hold of key=token to session s and starts renewing the
// lock unless it is renewed already; valid is the lock's validity now. A
// lock without hold counts bound again (a repeated SET) changes nothing. If
// s closed meanwhile, the hold is dropped at once instead: nobody would.
func (h *Handler) bind(s *Session, key, token string, ttl, valid time.Duration, kind bindKind) {
	ref := lockRef{s.DB(), key, token}
	switch again, gone := h.tie(s, ref, ttl, valid, kind); {
	case gone:
		h.dropHolds(ref, 1)
	case again != nil:
		again.kept.Granted(valid)
	}
}

// tie is bind of ref, the lock in its database, without what may wait
// for the backends or for a renewal, which it leaves to the caller: gone,
// s closed meanwhile and the hold must be dropped; again (not nil), the
// lock was bound already and its keeper must be told of the new validity
// (Kept.Granted, which waits for a renewal in flight).
func (h *Handler) tie(s *Session, ref lockRef, ttl, valid time.Duration, kind bindKind) (again *binding, gone bool) {
	r := &h.bound
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Context().Err() != nil {
		return nil, true
	}
	b, ok := r.byRef[ref]
	if !ok {
		// Held for the lock's life: its own copies, not a share of
		// the request's chunk (see keptStrings).
		ref.key, ref.token = strings.Clone(ref.key), strings.Clone(ref.token)
		b = &binding{ref: ref, kind: kind, holds: map[int64]int{}}
		b.kept = h.cluster.DB(ref.db).Keep(ref.key, ref.token, ttl, valid, func(err error) { h.lose(b, ttl, err) })
		r.add(b)
	}
	if quorum.IsOwnerToken(ref.token) || b.holds[s.ID] == 0 {
		b.holds[s.ID]++
	}
	r.index(b, s.ID)
	if ok {
		return b, false
	}
	return nil, false
}

// dropHolds drops n holds of ref on the backends: Unhold for an owner
// lock, a release for any other (it has one hold). It reports whether the
// lock is known to be free now; an Unhold that failed leaves that open.
func (h *Handler) dropHolds(ref lockRef, n int) (free bool) {
	ctx, cl := context.Background(), h.cluster.DB(ref.db)
	if !quorum.IsOwnerToken(ref.token) {
		_, _ = cl.Release(ctx, ref.key, ref.token)
		return true
	}
	for range n {
		_, left, err := cl.Unhold(ctx, ref.key, ref.token)
		if free = err == nil && left == 0; free {
			return true
		}
	}
	return false
}

// add registers b; the caller holds r.mu.
func (r *bindings) add(b *binding) {
	if r.byRef == nil {
		r.byRef = map[lockRef]*binding{}
		r.bySession = map[int64]map[lockRef]*binding{}
	}
	r.byRef[b.ref] = b
	r.held.Add(1)
}

// index lists b under session id; the caller holds r.mu.
func (r *bindings) index(b *binding, id int64) {
	if r.bySession[id] == nil {
		r.bySession[id] = map[lockRef]*binding{}
	}
	r.bySession[id][b.ref] = b
}

// unindex takes b off session id's list; the caller holds r.mu.
func (r *bindings) unindex(b *binding, id int64) {
	if m := r.bySession[id]; m != nil && m[b.ref] == b {
		delete(m, b.ref)
		if len(m) == 0 {
			delete(r.bySession, id)
		}
	}
}

// remove unregisters b and reports whether it was still registered; the
// caller holds r.mu.
func (r *bindings) remove(b *binding) bool {
	if r.byRef[b.ref] != b {
		return false
	}
	delete(r.byRef, b.ref)
	for id := range b.holds {
		r.unindex(b, id)
	}
	r.held.Add(-1)
	return true
}

// lose runs on the renewal goroutine when a kept lock was lost: its
// validity ran out without a successful renewal. Every connection that
// held it is told (a RESP3 push), and RENEW/UNLOCK answer "not held".
func (h *Handler) lose(b *binding, ttl time.Duration, err error) {
	r := &h.bound
	now := time.Now()
	r.mu.Lock()
	holders := slices.Collect(maps.Keys(b.holds))
	kept := b.total()
	gone := r.remove(b)
	if gone {
		r.recordLost(b.ref, holders, now, now.Add(ttl))
	}
	r.mu.Unlock()
	if !gone {
		return
	}
	r.nlost.Add(1)
	h.opts.Logger.Warn("connection-bound lock lost", "key", b.ref.key, "reason", err)
	if quorum.IsOwnerToken(b.ref.token) {
		// Holds of the same owner renewed elsewhere may keep the token
		// alive: the lost holds must not count among them any more.
		h.dropHolds(b.ref, kept)
	}
	for _, id := range holders {
		if v, ok := h.sessions.Load(id); ok {
			v.(*Session).pushLost(b.ref.key)
		}
	}
}

// recordLost remembers that ref was lost, for the connections holders if
// it is an owner lock, until until; it forgets records older than now. The
// caller holds r.mu.
func (r *bindings) recordLost(ref lockRef, holders []int64, now, until time.Time) {
	if r.lost == nil {
		r.lost = map[lockRef]lostLock{}
	}
	for ref, l := range r.lost {
		if now.After(l.until) {
			delete(r.lost, ref)
		}
	}
	l := lostLock{until: until}
	if quorum.IsOwnerToken(ref.token) {
		l.only = r.lost[ref].only // an earlier loss of other holds stands
		if l.only == nil {
			l.only = map[int64]bool{}
		}
		for _, id := range holders {
			l.only[id] = true
		}
	}
	r.lost[ref] = l
	r.nrecords.Store(int64(len(r.lost)))
}

// took records a round of session s in database db that acquired keys
// with token (when err is nil): a kept lock of theirs that was lost is
// forgotten, for s alone if it is an owner lock (s took a new hold of
// it). The client chose the token and reuses it, or the owner holds its
// lock again: GET, RENEW and UNLOCK answer from the backends again.
func (h *Handler) took(s *Session, db int, err error, token string, keys ...string) {
	r := &h.bound
	if err != nil || r.nrecords.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { r.nrecords.Store(int64(len(r.lost))) }()
	for _, key := range keys {
		ref := lockRef{db, key, token}
		if l, ok := r.lost[ref]; ok && l.only != nil {
			delete(l.only, s.ID)
			continue
		}
		delete(r.lost, ref)
	}
}

// extended records an extend of keys by token that succeeded with
// validity v (when err is nil): a kept lock among them keeps it, its
// renewals never cutting short what the client was told.
func (h *Handler) extended(s *Session, v time.Duration, err error, token string, keys ...string) {
	if err != nil {
		return
	}
	for _, key := range keys {
		if b := h.bound.get(lockRef{s.DB(), key, token}); b != nil {
			b.kept.Granted(v)
		}
	}
}

// wasLost reports whether key=token was a kept lock whose renewal failed
// within its ttl, as session id sees it: an owner lock is lost only to the
// connections whose kept holds were lost.
func (r *bindings) wasLost(ref lockRef, id int64) bool {
	if r.nrecords.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lost[ref]
	return ok && time.Now().Before(l.until) && (l.only == nil || l.only[id])
}

func (r *bindings) get(ref lockRef) *binding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byRef[ref]
}

// unbind stops renewing b (without releasing it) if it is still bound.
func (h *Handler) unbind(b *binding) {
	h.bound.mu.Lock()
	h.bound.remove(b)
	h.bound.mu.Unlock()
	b.kept.Stop(false)
}

// unbindKey stops renewing every lock bound to key, whatever its token,
// and waits for a renewal in flight: DEL or EXPIRE is about to set the
// key's life by the client's word, which a renewal must not undo (extend
// it past the new ttl, restore it after the delete), nor count as a loss.
func (h *Handler) unbindKey(db int, key string) {
	r := &h.bound
	r.mu.Lock()
	bs := r.onKeysLocked(db, key)
	for _, b := range bs {
		r.remove(b)
	}
	r.mu.Unlock()
	for _, b := range bs {
		b.kept.Stop(false)
	}
}

// releaseSessionLocks drops every kept hold of s; CloseSession calls it
// after cancelling s, so a bind racing it sees s closed.
func (h *Handler) releaseSessionLocks(s *Session) {
	r := &h.bound
	r.mu.Lock()
	bs := slices.Collect(maps.Values(r.bySession[s.ID]))
	r.mu.Unlock()
	for _, b := range bs {
		h.dropSessionHolds(b, s.ID)
	}
}

// dropSessionHolds drops session id's kept holds of b. The lock is
// released when they were its last holds; renewal stops when no kept hold
// is left (holds taken without KEEPALIVE then live by their ttl).
func (h *Handler) dropSessionHolds(b *binding, id int64) {
	r := &h.bound
	b.kept.While(func() bool {
		r.mu.Lock()
		n := b.holds[id]
		delete(b.holds, id)
		r.unindex(b, id)
		last := b.total() == 0
		r.mu.Unlock()
		if n == 0 {
			return false // dropped meanwhile (UNLOCK, a loss)
		}
		if !last && !quorum.IsOwnerToken(b.ref.token) {
			return false // one lock, one hold: it goes with its last connection
		}
		free := h.dropHolds(b.ref, n)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !free && (!last || b.total() > 0) {
			return false // another connection's kept hold lives on
		}
		r.remove(b)
		return true
	})
}

// isSessionLock reports whether key=token is a session lock (taken without
// an expiry) that this proxy keeps alive: TTL and PTTL answer -1 for it.
// It is one only while nothing gave the key an expiry: PEXPIRE and EXPIRE,
// a SET with an expiry and without NX (unbindKey) and a script that sets
// the key's expiry (evalOnKept) each end its renewal, and PTTL then
// answers the expiry the backends hold.
func (h *Handler) isSessionLock(s *Session, key, token string) bool {
	b := h.bound.get(lockRef{s.DB(), key, token})
	return b != nil && b.kind == bindSession
}
