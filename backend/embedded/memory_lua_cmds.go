package embedded

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The commands redis.call runs on the in-memory node: those the script
// check admits (strings, ttls, hashes, PUBLISH, SELECT), with Redis 7's
// replies and error texts.

type luaCmd struct {
	arity int // Redis's: n exactly n words, -n at least n
	run   func(r *luaRun, args []string) quorum.Value
}

var luaCmds map[string]luaCmd

func init() {
	luaCmds = map[string]luaCmd{
		"get": {2, (*luaRun).get}, "set": {-3, (*luaRun).set}, "setnx": {3, msetCmd(true)},
		"setex": {4, setexCmd(time.Second, "setex")}, "psetex": {4, setexCmd(time.Millisecond, "psetex")},
		"getdel": {2, (*luaRun).getdel}, "del": {-2, countKeys(true)}, "unlink": {-2, countKeys(true)},
		"exists": {-2, countKeys(false)},
		"strlen": {2, (*luaRun).strlen}, "type": {2, (*luaRun).typeOf},
		"getrange": {4, (*luaRun).getrange}, "mget": {-2, (*luaRun).mget},
		"mset": {-3, msetCmd(false)}, "msetnx": {-3, msetCmd(true)},
		"pexpire": {-3, expireCmd(time.Millisecond, false, "pexpire")}, "expire": {-3, expireCmd(time.Second, false, "expire")},
		"pexpireat": {-3, expireCmd(time.Millisecond, true, "pexpireat")}, "expireat": {-3, expireCmd(time.Second, true, "expireat")},
		"pttl": {2, ttlCmd(false, false)}, "ttl": {2, ttlCmd(true, false)},
		"pexpiretime": {2, ttlCmd(false, true)}, "expiretime": {2, ttlCmd(true, true)},
		"hget": {3, hashCmd(false, (*luaRun).hget)}, "hset": {-4, (*luaRun).hset}, "hmset": {-4, (*luaRun).hmset},
		"hsetnx": {4, hashCmd(false, (*luaRun).hsetnx)}, "hincrby": {4, (*luaRun).hincrby},
		"hmget": {-3, hashCmd(false, (*luaRun).hmget)}, "hdel": {-3, hashCmd(false, (*luaRun).delFields)},
		"hexists": {3, hashCmd(false, (*luaRun).hasField)}, "hlen": {2, hashCmd(false, (*luaRun).countFields)},
		"hgetall": {2, hashReply(fieldName, fieldVal)}, "hkeys": {2, hashReply(fieldName)}, "hvals": {2, hashReply(fieldVal)},
		"publish": {3, (*luaRun).publish}, "spublish": {3, (*luaRun).publish}, "select": {2, (*luaRun).selectDB},
		"dbsize": {1, (*luaRun).dbsize},
	}
}

const (
	errWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInteger  = "ERR value is not an integer or out of range"
	errSyntax      = "ERR syntax error"
	errNotAllowed  = "ERR This Redis command is not allowed from script"
	errScriptArity = "ERR Wrong number of args calling Redis command from script"
	errCompile     = "ERR Error compiling script (new function): "
)

// The error texts that name the command: an expiry Redis refuses, and
// arguments that the arity admits but that do not pair up.
func errExpireTime(name string) string { return "ERR invalid expire time in '" + name + "' command" }

func errArgCount(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// errorRef is an error reply beside a step's result (nil: none).
func errorRef(msg string) *quorum.Value {
	v := errorValue(msg)
	return &v
}

// command runs one redis.call: args[0] is the command's name.
func (r *luaRun) command(args []string) quorum.Value {
	name := strings.ToLower(args[0])
	c, ok := luaCmds[name]
	if !ok && r.kind {
		c, ok = luaKindCmds[name]
	}
	switch {
	case !ok:
		return errorValue(errNotAllowed)
	case c.arity > 0 && len(args) != c.arity, c.arity < 0 && len(args) < -c.arity:
		return errorValue(errScriptArity)
	}
	return c.run(r, args[1:])
}

var (
	valueOK  = quorum.Value{Kind: quorum.StatusValue, Str: "OK"}
	valueNil = quorum.Value{Kind: quorum.NilValue}
)

func intValue(n int64) quorum.Value   { return quorum.Value{Kind: quorum.IntValue, Int: n} }
func bulkValue(s string) quorum.Value { return quorum.Value{Kind: quorum.BulkValue, Str: s} }

// bulkOr is s as a bulk string, or a null when it is absent (!ok).
func bulkOr(s string, ok bool) quorum.Value {
	if !ok {
		return valueNil
	}
	return bulkValue(s)
}

func boolValue(b bool) quorum.Value {
	if b {
		return intValue(1)
	}
	return intValue(0)
}

// parseInt reads a decimal integer as Redis does: no sign but '-', no
// leading zeros, no spaces.
func parseInt(s string) (int64, bool) {
	if s == "" || s[0] == '+' || (len(s) > 1 && s[0] == '0') || strings.HasPrefix(s, "-0") {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// str reads key as a string: a WRONGTYPE error when it holds a hash.
func (r *luaRun) str(key string) (string, bool, *quorum.Value) {
	e, h, ok := r.look(key)
	if h != nil {
		return "", false, errorRef(errWrongType)
	}
	return e.token, ok, nil
}

// hash reads key as a hash (nil when absent): a WRONGTYPE error when it
// holds another type.
func (r *luaRun) hash(key string) (*memHash, *quorum.Value) { return r.fields(key, false) }

// fields reads key as a hash, or with zset as a sorted set (nil when
// absent): a WRONGTYPE error when it holds another type.
func (r *luaRun) fields(key string, zset bool) (*memHash, *quorum.Value) {
	_, h, ok := r.look(key)
	if ok && (h == nil || h.zset != zset) {
		return nil, errorRef(errWrongType)
	}
	return h, nil
}

func (r *luaRun) get(args []string) quorum.Value {
	s, ok, errv := r.str(args[0])
	if errv != nil {
		return *errv
	}
	return bulkOr(s, ok)
}

// setexCmd is SETEX and PSETEX: key ttl value.
func setexCmd(unit time.Duration, name string) func(*luaRun, []string) quorum.Value {
	return func(r *luaRun, args []string) quorum.Value {
		at, errv := r.expiryArg(args[1], unit, false, name)
		if errv != nil {
			return *errv
		}
		r.putString(args[0], args[2], at)
		return valueOK
	}
}

// expiryAfter is the expiry n units from now (absolute: at unix time n),
// false when Redis finds it overflowing.
func (r *luaRun) expiryAfter(n int64, unit time.Duration, absolute bool) (time.Time, bool) {
	ms := n
	if unit == time.Second {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return time.Time{}, false
		}
		ms = n * 1000
	}
	if absolute {
		return r.at(ms), true
	}
	if ms > math.MaxInt64-r.nowMS() {
		return time.Time{}, false
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return r.at(ms + r.nowMS()), true // past a Duration: centuries away
	}
	// From now on the node's clock, as its native commands count: not
	// rounded to the ms.
	return r.s.now.Add(time.Duration(ms) * time.Millisecond), true
}

func (r *luaRun) getdel(args []string) quorum.Value {
	v := r.get(args)
	if v.Kind == quorum.BulkValue {
		r.del(args[0])
	}
	return v
}

// countKeys is EXISTS, and with del DEL and UNLINK: how many of the
// keys exist (existed).
func countKeys(del bool) func(*luaRun, []string) quorum.Value {
	return func(r *luaRun, keys []string) quorum.Value {
		var n int64
		for _, k := range keys {
			if _, _, ok := r.look(k); ok {
				n++
				if del {
					r.del(k)
				}
			}
		}
		return intValue(n)
	}
}

func (r *luaRun) strlen(args []string) quorum.Value {
	s, _, errv := r.str(args[0])
	if errv != nil {
		return *errv
	}
	return intValue(int64(len(s)))
}

func (r *luaRun) typeOf(args []string) quorum.Value {
	t := "none"
	if _, h, ok := r.look(args[0]); h != nil && h.zset {
		t = "zset"
	} else if h != nil {
		t = "hash"
	} else if ok {
		t = "string"
	}
	return quorum.Value{Kind: quorum.StatusValue, Str: t}
}

// publish delivers to the node's subscribers once the node's lock is let
// go, as a native Publish does; the reply counts them.
func (r *luaRun) publish(args []string) quorum.Value {
	if r.kind && args[0] == memReleaseChannel {
		r.s.announce = append(r.s.announce, memRelease{r.db, args[1]})
		return intValue(1)
	}
	msgs, n := r.s.m.pubsub.matches(args[0], args[1])
	r.s.published = append(r.s.published, msgs...)
	return intValue(n)
}

// dbsize counts the live keys of the script's database, strings and
// hashes, as Redis's DBSIZE does (expired ones are not keys any more).
func (r *luaRun) dbsize([]string) quorum.Value {
	m, now := r.s.m, r.s.now
	var n int64
	count := func(k string, expires time.Time) {
		if db, _ := memSplit(k); db == r.db && now.Before(expires) {
			n++
		}
	}
	for k, e := range m.keys {
		count(k, e.expires)
	}
	for k, h := range m.scripts.hashes {
		count(k, h.expires)
	}
	return intValue(n)
}

func (r *luaRun) selectDB(args []string) quorum.Value {
	n, ok := parseInt(args[0])
	switch {
	case !ok || n > math.MaxInt32 || n < math.MinInt32:
		return errorValue(errNotInteger)
	case n < 0 || n >= memDBs:
		return errorValue("ERR DB index is out of range")
	}
	r.db = int(n)
	return valueOK
}
