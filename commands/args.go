package commands

import (
	"math"
	"strconv"
	"time"
)

// parseInt parses a Redis integer argument: base 10, no sign but '-', no spaces.
func parseInt(s string) (int64, bool) {
	if s == "" || s[0] == '+' || len(s) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// ttlArg parses a positive expiry of unit (time.Millisecond or time.Second)
// and checks it against max-ttl, writing Redis's error on failure.
func (h *Handler) ttlArg(c *call, s string, unit time.Duration) (time.Duration, bool) {
	n, ok := parseInt(s)
	if !ok {
		c.w.WriteError(msgNotInt)
		return 0, false
	}
	if n <= 0 {
		c.w.WriteError(errExpire(c.name))
		return 0, false
	}
	ttl, msg := h.expiryTTL(n, unit, c.name)
	if msg != "" {
		c.w.WriteError(msg)
		return 0, false
	}
	return ttl, true
}

// expiryTTL is an expiry of n (> 0) units from now, held to max-ttl, or
// the error reply: Redis's own where Redis refuses it too (its expiry
// would pass the range of its clock), else max-ttl's.
func (h *Handler) expiryTTL(n int64, unit time.Duration, cmd string) (time.Duration, string) {
	ms := n
	if unit == time.Second {
		if n > math.MaxInt64/1000 {
			return 0, errExpire(cmd)
		}
		ms = n * 1000
	}
	// Redis refuses an expiry that overflows once added to its clock;
	// only a ttl beyond half the range can (the clock reads far less).
	if ms > math.MaxInt64/2 && ms > math.MaxInt64-time.Now().UnixMilli() {
		return 0, errExpire(cmd)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) || time.Duration(ms)*time.Millisecond > h.opts.MaxTTL {
		return 0, msgTTLTooLarge
	}
	return time.Duration(ms) * time.Millisecond, ""
}

// truncMillis is d in whole milliseconds for a reply (a validity, a PTTL),
// truncated, except that a positive d under a millisecond is 1, so that
// time left never reads as none. Compare backend's
// ceilMillis, which rounds a ttl sent to a backend up.
func truncMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if ms < 1 && d > 0 {
		return 1
	}
	return ms
}

// parseIntBytes is parseInt of an argument as it arrived.
func parseIntBytes(b []byte) (int64, bool) { return parseInt(string(b)) }
