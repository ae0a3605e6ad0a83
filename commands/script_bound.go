package commands

import (
	"cmp"
	"context"
	"slices"
)

// evalOnKept runs a writing script's round (run, which says per key
// whether the script set its expiry) over keys of database db. The
// renewals of this proxy's kept locks on those keys are held off
// meanwhile, so that none races the script (a renewal's repair could put
// back a key the script deleted). Afterwards a kept lock whose token no
// longer holds its key on a majority was released or replaced by the
// client's own script: its renewal ends there, as after UNLOCK or DEL,
// rather than failing and counting a loss. A session lock whose expiry
// the script set is no session lock any more (see sessionPTTL): it lives
// by the expiry the client gave it. Any other lock the script left held
// (a refresh of a KEEPALIVE lock by its holder, another client's release
// with the wrong token) stays kept: ending its renewal would let it
// expire under its holder.
func (h *Handler) evalOnKept(db int, keys []string, run func() (timed []bool)) {
	bs := h.bound.onKeys(db, keys)
	if len(bs) == 0 {
		run()
		return
	}
	gone := map[*binding]bool{}
	holdOff(bs, func() {
		timed := run()
		for _, b := range bs {
			if i := slices.Index(keys, b.ref.key); b.kind == bindSession && i >= 0 && i < len(timed) && timed[i] {
				gone[b] = true // given an expiry: no longer a session lock
				continue
			}
			hd, err := h.cluster.DB(db).Get(context.Background(), b.ref.key)
			gone[b] = err == nil && !(hd.Held && hd.Token == b.ref.token)
		}
	}, func(b *binding) bool {
		if !gone[b] {
			return false
		}
		h.bound.mu.Lock()
		h.bound.remove(b)
		h.bound.mu.Unlock()
		return true
	})
}

// holdOff runs f with the renewals of every lock in bs held off, then asks
// stop of each whether its renewals end. bs is in lockRef order, so that
// two rounds over the same locks hold them off in the same order.
func holdOff(bs []*binding, f func(), stop func(*binding) bool) {
	if len(bs) == 0 {
		f()
		return
	}
	bs[0].kept.While(func() bool {
		holdOff(bs[1:], f, stop)
		return stop(bs[0])
	})
}

// onKeys lists the bound locks on keys of database db, in lockRef order.
func (r *bindings) onKeys(db int, keys []string) []*binding {
	r.mu.Lock()
	bs := r.onKeysLocked(db, keys...)
	r.mu.Unlock()
	slices.SortFunc(bs, func(a, b *binding) int {
		return cmp.Or(cmp.Compare(a.ref.key, b.ref.key), cmp.Compare(a.ref.token, b.ref.token))
	})
	return bs
}

// onKeysLocked lists the bound locks on keys of database db; r.mu is held.
func (r *bindings) onKeysLocked(db int, keys ...string) []*binding {
	var bs []*binding
	for ref, b := range r.byRef {
		if ref.db == db && slices.Contains(keys, ref.key) {
			bs = append(bs, b)
		}
	}
	return bs
}
