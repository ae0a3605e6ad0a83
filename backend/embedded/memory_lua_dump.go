package embedded

import (
	"encoding/binary"
	"math"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// DUMP and RESTORE, for the proxy's own scripts (a marked Eval's record
// and its undo, see backend's redis_eval.go): a key's value in the node's
// own encoding, which only the node reads back. One value always dumps to
// the same bytes (a hash's fields in their order, as a Redis listpack
// keeps them), so that scripts compare dumps for equality.
//
// The encoding: dumpMagic, the type ('s', 'h' or 'z'), then a string's
// bytes, or each field as its name's length (uvarint), its name, and its
// value's length and value (a hash) or its score's 8 bytes (a sorted set).

const dumpMagic = "\x00redlockd-dump-1\x00"

const (
	errDumpPayload = "ERR DUMP payload version or checksum are wrong"
	errBusyKey     = "BUSYKEY Target key name already exists."
	errRestoreTTL  = "ERR Invalid TTL value, must be >= 0"
)

// dump is DUMP: the key's value, null when absent.
func (r *luaRun) dump(args []string) quorum.Value {
	e, h, ok := r.look(args[0])
	if !ok {
		return valueNil
	}
	return bulkValue(dumpValue(e.token, h))
}

// dumpValue encodes a string (h nil) or a hash or sorted set.
func dumpValue(s string, h *memHash) string {
	var b []byte
	switch {
	case h == nil:
		b = make([]byte, 0, len(dumpMagic)+1+len(s))
		b = append(append(append(b, dumpMagic...), 's'), s...)
	case h.zset:
		b = append(append(b, dumpMagic...), 'z')
		for _, f := range h.fields {
			b = binary.AppendUvarint(b, uint64(len(f.name)))
			b = append(b, f.name...)
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(f.score))
		}
	default:
		b = append(append(b, dumpMagic...), 'h')
		for _, f := range h.fields {
			b = binary.AppendUvarint(b, uint64(len(f.name)))
			b = append(b, f.name...)
			b = binary.AppendUvarint(b, uint64(len(f.val)))
			b = append(b, f.val...)
		}
	}
	return string(b)
}

// undump decodes dumpValue's encoding: a string (h nil) or a hash or
// sorted set without expiry; false when d is not one.
func undump(d string) (s string, h *memHash, ok bool) {
	rest, ok := strings.CutPrefix(d, dumpMagic)
	if !ok || rest == "" {
		return "", nil, false
	}
	typ, rest := rest[0], rest[1:]
	if typ == 's' {
		return rest, nil, true
	}
	if typ != 'h' && typ != 'z' {
		return "", nil, false
	}
	h = &memHash{expires: memNoExpiry, zset: typ == 'z'}
	part := func() (string, bool) {
		n, w := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
		if w <= 0 || n > uint64(len(rest)-w) {
			return "", false
		}
		p := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		return p, true
	}
	for rest != "" {
		var f memField
		if f.name, ok = part(); !ok {
			return "", nil, false
		}
		switch {
		case h.zset && len(rest) >= 8:
			f.score = math.Float64frombits(binary.BigEndian.Uint64([]byte(rest[:8])))
			rest = rest[8:]
		case h.zset:
			return "", nil, false
		default:
			if f.val, ok = part(); !ok {
				return "", nil, false
			}
		}
		if h.find(f.name) >= 0 {
			return "", nil, false
		}
		h.fields = append(h.fields, f)
		if len(h.fields) >= memHashIndexAt {
			h.reindex()
		}
	}
	if len(h.fields) == 0 {
		return "", nil, false
	}
	return "", h, true
}

// restore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], with Redis 7's replies: ttl 0 is no expiry, with ABSTTL the
// ttl is a unix time in ms; a key whose expiry has passed is not created
// (with REPLACE, the key there goes). IDLETIME and FREQ are read and
// have no effect: the node keeps no access times.
func (r *luaRun) restore(args []string) quorum.Value {
	key := args[0]
	var replace, abs bool
	for i := 3; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "REPLACE":
			replace = true
		case "ABSTTL":
			abs = true
		case "IDLETIME", "FREQ":
			if i+1 >= len(args) {
				return errorValue(errSyntax)
			}
			if n, ok := parseInt(args[i+1]); !ok || n < 0 {
				return errorValue(errNotInteger)
			}
			i++
		default:
			return errorValue(errSyntax)
		}
	}
	ttl, ok := parseInt(args[1])
	switch {
	case !ok:
		return errorValue(errNotInteger)
	case ttl < 0:
		return errorValue(errRestoreTTL)
	}
	if _, _, there := r.look(key); there && !replace {
		return errorValue(errBusyKey)
	}
	s, h, ok := undump(args[2])
	if !ok {
		return errorValue(errDumpPayload)
	}
	expires := memNoExpiry
	if ttl != 0 {
		at, ok := r.expiryAfter(ttl, time.Millisecond, abs)
		if !ok {
			return errorValue(errRestoreTTL)
		}
		expires = at
	}
	if !r.s.now.Before(expires) {
		if replace {
			r.del(key)
		}
		return valueOK
	}
	if h == nil {
		r.putString(key, s, expires)
		return valueOK
	}
	h.expires = expires
	r.touch(r.phys(key))
	r.s.m.putHash(r.phys(key), h)
	return valueOK
}
