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
	if n <= 0 || n > math.MaxInt64/int64(unit) {
		c.w.WriteError(errExpire(c.name))
		return 0, false
	}
	ttl := time.Duration(n) * unit
	if ttl > h.opts.MaxTTL {
		c.w.WriteError(msgTTLTooLarge)
		return 0, false
	}
	return ttl, true
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
