package scriptcheck

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/redlockd/redlockd/internal/luanum"
)

// A script's SELECT is read as Redis 7.0 reads it. redis.call('select', v)
// hands Redis a string: v itself, or, where v is a Lua number
// (tonumber(ARGV[n]) or a number literal, read as Lua reads them:
// luanum), the number printed with "%.17g". Redis parses that string
// strictly (no sign but '-', no spaces, no leading zeros), then wants an
// int, then a db index.

// Errors of a failed SELECT, as Redis words them.
const (
	errSelectArg      = "ERR Lua redis lib command arguments must be strings or integers"
	errSelectNotInt   = "ERR value is not an integer or out of range"
	errSelectIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647"
	errSelectDBRange  = "ERR DB index is out of range"
)

// ScriptDB is the db a script runs in: the one it SELECTs first, conn
// where it selects none or where a SELECT through redis.pcall fails (the
// script goes on in the db it had). dbs is the number of dbs. A SELECT
// through redis.call that fails ends the script with an error, which
// ScriptDB returns as Redis gives it ("… script: <sha>, on
// @user_script:<line>.") for the reply.
func ScriptDB(info Info, args []string, conn, dbs int, sha string) (int, error) {
	switch {
	case info.DB >= 0:
		return info.DB, nil
	case info.DBArg == 0:
		return conn, nil
	}
	var db int
	var msg string
	switch {
	case info.DBArg > len(args):
		msg = errSelectArg // ARGV[n] is nil, and so is tonumber(nil)
	case info.DBArgNumber:
		db, msg = selectNumber(args[info.DBArg-1], dbs)
	default:
		db, msg = selectString(args[info.DBArg-1], dbs)
	}
	switch {
	case msg == "":
		return db, nil
	case info.DBArgPcall:
		return conn, nil
	}
	// Redis's words, full stop included.
	return 0, errors.New(msg + " script: " + sha + ", on @user_script:" + strconv.Itoa(info.DBLine) + ".")
}

// selectNumber is SELECT of tonumber(s): the db, or the error.
func selectNumber(s string, dbs int) (int, string) {
	f, ok := luanum.ToNumber(s)
	if !ok {
		return 0, errSelectArg
	}
	return selectString(luanum.Arg(f), dbs)
}

// selectString is SELECT of the string s: the db, or the error.
func selectString(s string, dbs int) (int, string) {
	n, ok := string2ll(s)
	switch {
	case !ok:
		return 0, errSelectNotInt
	case n < math.MinInt32 || n > math.MaxInt32:
		return 0, errSelectIntRange
	case n < 0 || n >= int64(dbs):
		return 0, errSelectDBRange
	}
	return int(n), ""
}

// string2ll is Redis's strict string to long long: an optional '-', then
// "0" alone or digits not starting with 0, within 64 bits.
func string2ll(s string) (int64, bool) {
	if s == "" || len(s) >= 21 {
		return 0, false
	}
	if s == "0" {
		return 0, true
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
