package embedded

import "time"

// The script's view of the node's store: keys of its current db, strings
// or hashes, every write recorded first (touch) with the key as it was.

// phys is where key of the script's current db lives.
func (r *luaRun) phys(key string) string { return memKey(r.db, key) }

// look returns key's live value: a string (h nil) or a hash.
func (r *luaRun) look(key string) (e entry, h *memHash, ok bool) {
	return r.s.m.lookup(r.phys(key), r.s.now)
}

// touch records the node's key k as it is before the script's first write
// to it.
func (r *luaRun) touch(k string) {
	if r.kind {
		return
	}
	for _, t := range r.touched {
		if t.key == k {
			return
		}
	}
	r.touched = append(r.touched, touchedKey{key: k, before: r.s.stateOf(k)})
}

func (r *luaRun) putString(key, val string, expires time.Time) {
	k := r.phys(key)
	r.touch(k)
	r.s.m.store(k, val, expires)
}

// del deletes key; a marked key's release is announced, as a native
// release's is.
func (r *luaRun) del(key string) {
	k := r.phys(key)
	r.touch(k)
	r.s.dropPhys(k, !r.kind)
}

// hashToWrite returns key's hash for a change, recorded first; a new,
// unstored one when key is absent. saveHash stores it.
func (r *luaRun) hashToWrite(key string, h *memHash) *memHash {
	r.touch(r.phys(key))
	if h == nil {
		h = &memHash{expires: memNoExpiry}
	}
	return h
}

// saveHash stores h at key; a hash left without fields is deleted, as on
// Redis.
func (r *luaRun) saveHash(key string, h *memHash) {
	k := r.phys(key)
	if len(h.fields) == 0 {
		r.s.dropPhys(k, true)
		return
	}
	r.s.m.putHash(k, h)
}

// setExpiry sets the expiry of the node's key k, a string or a hash.
func (r *luaRun) setExpiry(k string, t time.Time) {
	r.touch(k)
	m := r.s.m
	if e, ok := m.keys[k]; ok {
		m.store(k, e.token, t)
		return
	}
	if h := m.scripts.hashes[k]; h != nil {
		h.expires = t
		m.wrote()
	}
}

// at is the expiry of unix time ms, on the node's clock.
func (r *luaRun) at(ms int64) time.Time {
	return r.s.now.Add(time.UnixMilli(ms).Sub(r.s.now))
}

// nowMS is the script's time in unix milliseconds.
func (r *luaRun) nowMS() int64 { return r.s.now.UnixMilli() }

// expiryMS is an expiry in unix milliseconds, -1 for none.
func expiryMS(t time.Time) int64 {
	if t.Equal(memNoExpiry) {
		return -1
	}
	return t.UnixMilli()
}
