package embedded

import "time"

// memScripts is what the in-memory node keeps for replicated scripts: the
// hash values they write and the undo records of marked runs. Both live
// beside the string map, so that a native command, which only ever meets
// strings, pays for them with one length check on a miss and nothing on a
// hit, and an entry stays a token and an expiry.
type memScripts struct {
	hashes  map[string]*memHash
	records map[string]*evalRecord // by Mark
}

// memHash is a hash value. Its fields keep their insertion order, as
// Redis's listpack does for the small hashes lock scripts write, so that
// HGETALL, HKEYS and HVALS answer in the same order as a Redis node.
type memHash struct {
	fields  []memField
	index   map[string]int // field → position, once the hash is large
	expires time.Time
	// zset: the value is a sorted set (memory_lua_zset.go), its members
	// the fields' names, their scores the fields' scores.
	zset bool
}

type memField struct {
	name, val string
	score     float64 // a sorted set's
}

// memHashIndexAt is the size from which a hash indexes its fields: below
// it a linear scan is cheaper than a map.
const memHashIndexAt = 16

// memNoExpiry is the expiry of a key a script left without one. It is
// later than any deadline, so the sweep never drops it.
var memNoExpiry = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// find is name's position, -1 when it is absent; an absent hash (nil)
// reads as an empty one.
func (h *memHash) find(name string) int {
	if h == nil {
		return -1
	}
	if h.index != nil {
		if i, ok := h.index[name]; ok {
			return i
		}
		return -1
	}
	for i, f := range h.fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// all is h's fields in order; none for an absent hash.
func (h *memHash) all() []memField {
	if h == nil {
		return nil
	}
	return h.fields
}

func (h *memHash) get(name string) (string, bool) {
	if i := h.find(name); i >= 0 {
		return h.fields[i].val, true
	}
	return "", false
}

// set stores name=val and reports whether the field is new.
func (h *memHash) set(name, val string) bool {
	if i := h.find(name); i >= 0 {
		h.fields[i].val = val
		return false
	}
	h.fields = append(h.fields, memField{name: name, val: val})
	if h.index != nil {
		h.index[name] = len(h.fields) - 1
	} else if len(h.fields) >= memHashIndexAt {
		h.reindex()
	}
	return true
}

// del removes name, keeping the order of the others.
func (h *memHash) del(name string) bool {
	i := h.find(name)
	if i < 0 {
		return false
	}
	h.fields = append(h.fields[:i], h.fields[i+1:]...)
	if h.index != nil {
		h.reindex()
	}
	return true
}

func (h *memHash) reindex() {
	h.index = make(map[string]int, len(h.fields))
	for i, f := range h.fields {
		h.index[f.name] = i
	}
}

// clone is a copy that later writes to h do not change.
func (h *memHash) clone() *memHash {
	c := &memHash{fields: append([]memField(nil), h.fields...), expires: h.expires, zset: h.zset}
	if h.index != nil {
		c.reindex()
	}
	return c
}

func (h *memHash) equal(o *memHash) bool {
	if len(h.fields) != len(o.fields) || !h.expires.Equal(o.expires) || h.zset != o.zset {
		return false
	}
	for i, f := range h.fields {
		if o.fields[i] != f {
			return false
		}
	}
	return true
}

// dropHash deletes a hash at key: a string written there replaces it. The
// caller holds m.mu.
func (m *Memory) dropHash(key string) {
	if len(m.scripts.hashes) != 0 {
		delete(m.scripts.hashes, key)
	}
}

// putHash stores h at key in place of any string there, and counts the
// write as store does.
func (m *Memory) putHash(key string, h *memHash) {
	delete(m.keys, key)
	if m.scripts.hashes == nil {
		m.scripts.hashes = make(map[string]*memHash)
	}
	m.scripts.hashes[key] = h
	m.wrote()
}

// sweepScripts drops expired hashes and undo records; sweep calls it.
func (m *Memory) sweepScripts(now time.Time) {
	for k, h := range m.scripts.hashes {
		if !now.Before(h.expires) {
			m.expire(k)
		}
	}
	for k, r := range m.scripts.records {
		if !now.Before(r.expires) {
			delete(m.scripts.records, k)
		}
	}
}
