package embedded

import (
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// setOpts are SET's options, parsed as Redis 7 parses them: an option may
// repeat (the last amount counts), but not meet one it excludes.
type setOpts struct {
	nx, xx, get, keepTTL bool
	expiry               string // "EX", "PX", "EXAT", "PXAT"; "" none
	amount               string
}

func parseSetOpts(args []string) (setOpts, bool) {
	var o setOpts
	for i := 0; i < len(args); i++ {
		switch a := strings.ToUpper(args[i]); {
		case a == "NX" && !o.xx:
			o.nx = true
		case a == "XX" && !o.nx:
			o.xx = true
		case a == "GET":
			o.get = true
		case a == "KEEPTTL" && o.expiry == "":
			o.keepTTL = true
		case (a == "EX" || a == "PX" || a == "EXAT" || a == "PXAT") && !o.keepTTL && (o.expiry == "" || o.expiry == a) && i+1 < len(args):
			o.expiry, o.amount = a, args[i+1]
			i++
		default:
			return o, false
		}
	}
	return o, true
}

// setOptsExpiry is the expiry SET's options give, or an error reply.
func (r *luaRun) setOptsExpiry(o setOpts) (time.Time, *quorum.Value) {
	if o.expiry == "" {
		return memNoExpiry, nil
	}
	unit := time.Millisecond
	if o.expiry == "EX" || o.expiry == "EXAT" {
		unit = time.Second
	}
	return r.expiryArg(o.amount, unit, strings.HasSuffix(o.expiry, "AT"), "set")
}

// expiryArg reads SET's, SETEX's or PSETEX's amount of unit (absolute:
// a unix time), or command name's error reply: Redis refuses an amount
// not above 0, or one that overflows.
func (r *luaRun) expiryArg(amount string, unit time.Duration, absolute bool, name string) (time.Time, *quorum.Value) {
	n, ok := parseInt(amount)
	if !ok {
		return time.Time{}, errorRef(errNotInteger)
	}
	at, ok := r.expiryAfter(n, unit, absolute)
	if !ok || n <= 0 {
		return time.Time{}, errorRef(errExpireTime(name))
	}
	return at, nil
}

// set is SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL].
func (r *luaRun) set(args []string) quorum.Value {
	o, ok := parseSetOpts(args[2:])
	if !ok {
		return errorValue(errSyntax)
	}
	at, errv := r.setOptsExpiry(o)
	if errv != nil {
		return *errv
	}
	reply := valueOK
	if o.get {
		if reply = r.get(args[:1]); reply.Kind == quorum.ErrorValue {
			return reply
		}
	}
	old, _, found := r.look(args[0])
	if (o.nx && found) || (o.xx && !found) {
		if o.get {
			return reply
		}
		return valueNil
	}
	if o.keepTTL && found {
		at = old.expires
	}
	r.putString(args[0], args[1], at)
	return reply
}

// expireCmd is PEXPIRE, EXPIRE, PEXPIREAT and EXPIREAT with Redis 7's
// NX, XX, GT and LT, named name in errors. A time already past deletes
// the key.
func expireCmd(unit time.Duration, absolute bool, name string) func(*luaRun, []string) quorum.Value {
	return func(r *luaRun, args []string) quorum.Value {
		// Redis reads the flags before the amount: a bad flag is the
		// error even where the amount is not a number.
		flags, errv := parseExpireFlags(args[2:])
		if errv != nil {
			return *errv
		}
		n, ok := parseInt(args[1])
		if !ok {
			return errorValue(errNotInteger)
		}
		at, ok := r.expiryAfter(n, unit, absolute)
		if !ok {
			return errorValue(errExpireTime(name))
		}
		return r.expireAt(args[0], at, flags)
	}
}

type expireFlags struct{ nx, xx, gt, lt bool }

func parseExpireFlags(args []string) (expireFlags, *quorum.Value) {
	var f expireFlags
	for _, a := range args {
		switch strings.ToUpper(a) {
		case "NX":
			f.nx = true
		case "XX":
			f.xx = true
		case "GT":
			f.gt = true
		case "LT":
			f.lt = true
		default:
			return f, errorRef("ERR Unsupported option " + a)
		}
	}
	switch {
	case f.nx && (f.xx || f.gt || f.lt):
		return f, errorRef("ERR NX and XX, GT or LT options at the same time are not compatible")
	case f.gt && f.lt:
		return f, errorRef("ERR GT and LT options at the same time are not compatible")
	}
	return f, nil
}

func (r *luaRun) expireAt(key string, at time.Time, f expireFlags) quorum.Value {
	e, _, ok := r.look(key)
	if !ok {
		return intValue(0)
	}
	none, cur, when := e.expires.Equal(memNoExpiry), expiryMS(e.expires), at.UnixMilli()
	switch {
	case f.nx && !none, f.xx && none,
		f.gt && (none || when <= cur),
		f.lt && !none && when >= cur:
		return intValue(0)
	}
	if when <= r.nowMS() {
		r.del(key)
		return intValue(1)
	}
	r.setExpiry(r.phys(key), at)
	return intValue(1)
}

// ttlCmd is PTTL, TTL, PEXPIRETIME and EXPIRETIME: -2 absent, -1 no
// expiry; seconds are rounded as Redis rounds them.
func ttlCmd(seconds, absolute bool) func(*luaRun, []string) quorum.Value {
	return func(r *luaRun, args []string) quorum.Value {
		e, _, ok := r.look(args[0])
		switch {
		case !ok:
			return intValue(-2)
		case e.expires.Equal(memNoExpiry):
			return intValue(-1)
		}
		ms := expiryMS(e.expires)
		if !absolute {
			ms = max(ms-r.nowMS(), 0)
		}
		if seconds {
			ms = (ms + 500) / 1000
		}
		return intValue(ms)
	}
}
