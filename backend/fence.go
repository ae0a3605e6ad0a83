package backend

import (
	"fmt"
	"strconv"

	"github.com/redlockd/redlockd/quorum"
)

// parseFence reads a fence counter as both nodes store it: decimal digits
// for a value in [0, quorum.MaxFence]. Anything else (a sign, spaces, an
// exponent, hex, more than Lua compares exactly) is quorum.ErrBadFence, so
// that the node's vote counts as an error rather than as a number.
func parseFence(s string) (int64, error) {
	ok := len(s) > 0 && len(s) <= 16
	for i := 0; ok && i < len(s); i++ {
		ok = '0' <= s[i] && s[i] <= '9'
	}
	var v int64
	if ok {
		v, _ = strconv.ParseInt(s, 10, 64)
		ok = v <= quorum.MaxFence
	}
	if !ok {
		return 0, fmt.Errorf("%w: %.40q", quorum.ErrBadFence, s)
	}
	return v, nil
}
