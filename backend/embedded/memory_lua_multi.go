package embedded

import "github.com/redlockd/redlockd/quorum"

// GETRANGE, MGET, MSET and MSETNX on the in-memory node, as Redis 7 runs
// them from a script (bsm/redislock's scripts call them).

// getrange is GETRANGE key start end: the bytes from start to end, both
// included, negative counting from the end, clamped to the string.
func (r *luaRun) getrange(args []string) quorum.Value {
	start, ok1 := parseInt(args[1])
	end, ok2 := parseInt(args[2])
	if !ok1 || !ok2 {
		return errorValue(errNotInteger)
	}
	s, _, errv := r.str(args[0])
	if errv != nil {
		return *errv
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return bulkValue("")
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return bulkValue("")
	}
	return bulkValue(s[start : end+1])
}

// mget is MGET key…: each string's value, null for an absent key or one
// that is not a string.
func (r *luaRun) mget(args []string) quorum.Value {
	out := quorum.Value{Kind: quorum.ArrayValue, Elems: make([]quorum.Value, len(args))}
	for i, k := range args {
		e, h, ok := r.look(k)
		out.Elems[i] = bulkOr(e.token, ok && h == nil)
	}
	return out
}

// msetCmd is MSET key value… (every key set, without expiry) and, with
// nx, MSETNX (the same when no key exists, 1; else nothing, 0) and SETNX,
// MSETNX of the one key its arity admits.
func msetCmd(nx bool) func(*luaRun, []string) quorum.Value {
	name := "mset"
	if nx {
		name = "msetnx"
	}
	return func(r *luaRun, args []string) quorum.Value {
		if len(args)%2 != 0 {
			return errorValue(errArgCount(name))
		}
		for i := 0; nx && i < len(args); i += 2 {
			if _, _, ok := r.look(args[i]); ok {
				return intValue(0)
			}
		}
		for i := 0; i < len(args); i += 2 {
			r.putString(args[i], args[i+1], memNoExpiry)
		}
		if nx {
			return intValue(1)
		}
		return valueOK
	}
}
