package embedded

import (
	"math"
	"strconv"

	"github.com/redlockd/redlockd/internal/luanum"
	"github.com/redlockd/redlockd/quorum"
)

// The hash commands of redis.call, over memHash.

// hashCmd is a command on key's hash (zset: its sorted set), which run
// is given nil when key is absent: a WRONGTYPE error when key holds
// another type.
func hashCmd(zset bool, run func(*luaRun, []string, *memHash) quorum.Value) func(*luaRun, []string) quorum.Value {
	return func(r *luaRun, args []string) quorum.Value {
		h, errv := r.fields(args[0], zset)
		if errv != nil {
			return *errv
		}
		return run(r, args, h)
	}
}

func (*luaRun) hget(args []string, h *memHash) quorum.Value { return bulkOr(h.get(args[1])) }

func (r *luaRun) hset(args []string) quorum.Value { return r.hsetFields(args, "hset") }

func (r *luaRun) hmset(args []string) quorum.Value {
	if v := r.hsetFields(args, "hmset"); v.Kind == quorum.ErrorValue {
		return v
	}
	return valueOK
}

// hsetFields is HSET: it answers how many fields were added.
func (r *luaRun) hsetFields(args []string, name string) quorum.Value {
	if len(args)%2 == 0 {
		return errorValue(errArgCount(name))
	}
	h, errv := r.hash(args[0])
	if errv != nil {
		return *errv
	}
	h = r.hashToWrite(args[0], h)
	var added int64
	for i := 1; i+1 < len(args); i += 2 {
		if h.set(args[i], args[i+1]) {
			added++
		}
	}
	r.saveHash(args[0], h)
	return intValue(added)
}

func (r *luaRun) hsetnx(args []string, h *memHash) quorum.Value {
	if h.find(args[1]) >= 0 {
		return intValue(0)
	}
	h = r.hashToWrite(args[0], h)
	h.set(args[1], args[2])
	r.saveHash(args[0], h)
	return intValue(1)
}

// delFields is HDEL and ZREM: it deletes the fields (a sorted set's
// members) args name of key's hash h, and answers how many there were.
func (r *luaRun) delFields(args []string, h *memHash) quorum.Value {
	if h == nil {
		return intValue(0)
	}
	h = r.hashToWrite(args[0], h)
	var n int64
	for _, name := range args[1:] {
		if h.del(name) {
			n++
		}
	}
	r.saveHash(args[0], h)
	return intValue(n)
}

// hasField is HEXISTS's step, countFields HLEN's and ZCARD's.
func (*luaRun) hasField(args []string, h *memHash) quorum.Value {
	return boolValue(h.find(args[1]) >= 0)
}

func (*luaRun) countFields(_ []string, h *memHash) quorum.Value {
	return intValue(int64(len(h.all())))
}

func (r *luaRun) hincrby(args []string) quorum.Value {
	by, ok := parseInt(args[2])
	if !ok {
		return errorValue(errNotInteger)
	}
	h, errv := r.hash(args[0])
	if errv != nil {
		return *errv
	}
	var cur int64
	if v, found := h.get(args[1]); found {
		if cur, ok = parseInt(v); !ok {
			return errorValue("ERR hash value is not an integer")
		}
	}
	if (by > 0 && cur > math.MaxInt64-by) || (by < 0 && cur < math.MinInt64-by) {
		return errorValue("ERR increment or decrement would overflow")
	}
	h = r.hashToWrite(args[0], h)
	h.set(args[1], strconv.FormatInt(cur+by, 10))
	r.saveHash(args[0], h)
	return intValue(cur + by)
}

// hashReply is HGETALL, HKEYS and HVALS: key's fields, each as parts
// give it.
func hashReply(parts ...func(memField) string) func(*luaRun, []string) quorum.Value {
	return hashCmd(false, func(_ *luaRun, _ []string, h *memHash) quorum.Value { return fieldsReply(h.all(), parts...) })
}

// fieldsReply is the array of fs, each field as parts give it: a
// hash's fields, a sorted set's range.
func fieldsReply(fs []memField, parts ...func(memField) string) quorum.Value {
	arr := quorum.Value{Kind: quorum.ArrayValue, Elems: []quorum.Value{}}
	for _, f := range fs {
		for _, part := range parts {
			arr.Elems = append(arr.Elems, bulkValue(part(f)))
		}
	}
	return arr
}

// The parts of a field that replies list.
func fieldName(f memField) string  { return f.name }
func fieldVal(f memField) string   { return f.val }
func fieldScore(f memField) string { return luanum.Arg(f.score) }

func (*luaRun) hmget(args []string, h *memHash) quorum.Value {
	arr := quorum.Value{Kind: quorum.ArrayValue, Elems: make([]quorum.Value, 0, len(args)-1)}
	for _, f := range args[1:] {
		arr.Elems = append(arr.Elems, bulkOr(h.get(f)))
	}
	return arr
}
