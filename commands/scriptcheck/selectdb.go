package scriptcheck

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// A script's SELECT is read as Redis 7.0 reads it. redis.call('select', v)
// hands Redis a string: v itself, or, where v is a Lua number
// (tonumber(ARGV[n]) or a number literal), the number printed with
// "%.17g". Redis parses that string strictly (no sign but '-', no spaces,
// no leading zeros), then wants an int, then a db index. Lua's tonumber is
// C's strtod (glibc: leading spaces, a sign, decimals, exponents, hex and
// hex floats, inf and nan) followed by nothing but spaces, on the string
// up to its first NUL byte.

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
	f, ok := luaToNumber(s)
	if !ok {
		return 0, errSelectArg
	}
	return selectString(formatG17(f), dbs)
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

// formatG17 is C's printf("%.17g", f) for what SELECT can tell apart: an
// integer below 1e17 in magnitude prints as its digits, -0 as "-0",
// anything else as something Redis does not read as an integer.
func formatG17(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) >= 1e17:
		return "not an integer"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return strconv.FormatInt(int64(f), 10)
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

// luaToNumber is Lua 5.1's tonumber(s) as Redis's Lua runs it on glibc.
func luaToNumber(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeft(s, cSpace)
	n := strtodPrefix(s)
	if n == 0 || strings.TrimLeft(s[n:], cSpace) != "" {
		return 0, false
	}
	return parseStrtod(s[:n]), true
}

// cSpace are the bytes C's isspace is true of.
const cSpace = " \t\n\v\f\r"

// strtodPrefix is the length of the longest prefix of s that strtod
// reads (0: none).
func strtodPrefix(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	rest := strings.ToLower(s[i:])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return i + len("infinity")
	case strings.HasPrefix(rest, "inf"):
		return i + len("inf")
	case strings.HasPrefix(rest, "nan"):
		j := i + len("nan")
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isAlnum(s[k]) || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				return k + 1
			}
		}
		return j
	case strings.HasPrefix(rest, "0x"):
		if n := mantissa(s[i+2:], isHex); n > 0 {
			j := i + 2 + n
			return j + exponent(s[j:], 'p')
		}
	}
	n := mantissa(s[i:], isDigit)
	if n == 0 {
		return 0
	}
	j := i + n
	return j + exponent(s[j:], 'e')
}

// mantissa is the length of digits[.digits] at the start of s, with at
// least one digit (0: none).
func mantissa(s string, digit func(byte) bool) int {
	i, seen := 0, false
	for i < len(s) && digit(s[i]) {
		i, seen = i+1, true
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && digit(s[j]) {
			j, seen = j+1, true
		}
		if seen {
			return j
		}
	}
	if !seen {
		return 0
	}
	return i
}

// exponent is the length of an exponent (mark, optional sign, decimal
// digits) at the start of s; 0 where there is none or it has no digits.
func exponent(s string, mark byte) int {
	if len(s) == 0 || (s[0]|0x20) != mark {
		return 0
	}
	i := 1
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == i {
		return 0
	}
	return j
}

// parseStrtod is the value of a prefix that strtodPrefix accepted.
func parseStrtod(s string) float64 {
	body := strings.TrimLeft(s, "+-")
	neg := strings.HasPrefix(s, "-")
	var f float64
	switch low := strings.ToLower(body); {
	case strings.HasPrefix(low, "nan"):
		f = math.NaN()
	case strings.HasPrefix(low, "0x") && !strings.ContainsAny(low, "p"):
		f, _ = strconv.ParseFloat(body+"p0", 64)
	default:
		// Overflow gives ±Inf, as strtod's HUGE_VAL; underflow 0.
		f, _ = strconv.ParseFloat(body, 64)
	}
	if neg {
		f = -f
	}
	return f
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
func isAlnum(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }
