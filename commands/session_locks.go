package commands

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// Locks bound to a connection: LOCK … KEEPALIVE and session locks (SET
// without an expiry). The proxy renews each every third of its ttl while the
// connection that took it lives, and releases it when that connection
// closes. The registry is proxy-wide, so that PTTL/TTL can tell a session
// lock (-1, as Redis answers for a key without expiry) from a lock with a
// ttl; a second proxy in front of the same backends does not know it and
// answers the backend ttl.

type lockRef struct{ key, token string }

type bindKind int

const (
	bindKeepalive bindKind = iota
	// bindSession is a lock the client took without an expiry.
	bindSession
)

type binding struct {
	ref     lockRef
	session int64
	kind    bindKind
	kept    *quorum.Kept
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
	lost map[lockRef]time.Time

	held  atomic.Int64 // live connection-bound locks
	nlost atomic.Int64 // renewals that failed, since start
}

// KeepaliveStats are the counters of connection-bound locks, for INFO and
// metrics: Held is how many are live now, Lost how many were lost since
// start because a renewal did not reach a majority.
type KeepaliveStats struct {
	Held, Lost int64
}

// KeepaliveStats reads the counters of connection-bound locks.
func (h *Handler) KeepaliveStats() KeepaliveStats {
	return KeepaliveStats{Held: h.bound.held.Load(), Lost: h.bound.nlost.Load()}
}

// bind ties key=token to session s and starts renewing it. If the lock is
// already bound (a reentry, a repeated SET) nothing changes. If s closed
// meanwhile, the lock is released at once instead: nobody would release it.
func (h *Handler) bind(s *Session, key, token string, ttl time.Duration, kind bindKind) {
	ref := lockRef{key, token}
	b := &binding{ref: ref, session: s.ID, kind: kind}
	r := &h.bound
	r.mu.Lock()
	if _, ok := r.byRef[ref]; ok {
		r.mu.Unlock()
		return
	}
	if s.Context().Err() != nil {
		r.mu.Unlock()
		_, _ = h.cluster.Release(context.Background(), key, token)
		return
	}
	b.kept = h.cluster.Keep(key, token, ttl, func(err error) { h.lose(b, ttl, err) })
	r.add(b)
	r.mu.Unlock()
}

// add registers b; the caller holds r.mu.
func (r *bindings) add(b *binding) {
	if r.byRef == nil {
		r.byRef = map[lockRef]*binding{}
		r.bySession = map[int64]map[lockRef]*binding{}
	}
	r.byRef[b.ref] = b
	if r.bySession[b.session] == nil {
		r.bySession[b.session] = map[lockRef]*binding{}
	}
	r.bySession[b.session][b.ref] = b
	r.held.Add(1)
}

// remove unregisters b and reports whether it was still registered; the
// caller holds r.mu.
func (r *bindings) remove(b *binding) bool {
	if r.byRef[b.ref] != b {
		return false
	}
	delete(r.byRef, b.ref)
	if m := r.bySession[b.session]; m != nil {
		delete(m, b.ref)
		if len(m) == 0 {
			delete(r.bySession, b.session)
		}
	}
	r.held.Add(-1)
	return true
}

// lose runs on the renewal goroutine when a renewal failed.
func (h *Handler) lose(b *binding, ttl time.Duration, err error) {
	r := &h.bound
	now := time.Now()
	r.mu.Lock()
	gone := r.remove(b)
	if gone {
		if r.lost == nil {
			r.lost = map[lockRef]time.Time{}
		}
		for ref, until := range r.lost {
			if now.After(until) {
				delete(r.lost, ref)
			}
		}
		r.lost[b.ref] = now.Add(ttl)
	}
	r.mu.Unlock()
	if gone {
		r.nlost.Add(1)
		h.opts.Logger.Warn("connection-bound lock lost: renewal failed", "key", b.ref.key, "err", err)
	}
}

// wasLost reports whether key=token was a kept lock whose renewal failed
// within its ttl.
func (r *bindings) wasLost(ref lockRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.lost[ref]
	return ok && time.Now().Before(until)
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

// unbindKey stops renewing every lock bound to key, whatever its token:
// DEL (or an expire to the past) took the key away from its holder, so a
// renewal could only fail and count a loss nobody suffered.
func (h *Handler) unbindKey(key string) {
	h.dropBindings(func(r *bindings) []*binding {
		var bs []*binding
		for ref, b := range r.byRef {
			if ref.key == key {
				bs = append(bs, b)
			}
		}
		return bs
	}, false)
}

// releaseSessionLocks releases every lock bound to s; CloseSession calls
// it after cancelling s, so a bind racing it sees s closed.
func (h *Handler) releaseSessionLocks(s *Session) {
	h.dropBindings(func(r *bindings) []*binding {
		return slices.Collect(maps.Values(r.bySession[s.ID]))
	}, true)
}

// dropBindings removes the bindings that pick chooses (pick runs under
// the registry's lock), then stops their keepers outside it; release also
// releases their locks.
func (h *Handler) dropBindings(pick func(*bindings) []*binding, release bool) {
	r := &h.bound
	r.mu.Lock()
	bs := pick(r)
	for _, b := range bs {
		r.remove(b)
	}
	r.mu.Unlock()
	for _, b := range bs {
		b.kept.Stop(release)
	}
}

// isSessionLock reports whether key=token is a session lock (taken without
// an expiry) that this proxy keeps alive: TTL and PTTL answer -1 for it.
func (h *Handler) isSessionLock(key, token string) bool {
	b := h.bound.get(lockRef{key, token})
	return b != nil && b.kind == bindSession
}
