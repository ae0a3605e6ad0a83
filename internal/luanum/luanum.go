// Package luanum reads a string as a number the way the Lua 5.1 of a
// Redis server does: tonumber, and the lexer's number literals, are C's
// strtod (glibc: leading spaces, a sign, decimals, exponents, hex and hex
// floats, inf and nan) followed by nothing but spaces, on the string up to
// its first NUL byte (Lua hands C the string).
package luanum

import (
	"math"
	"strconv"
	"strings"
)

// ToNumber is Lua 5.1's tonumber(s) of a string s, as Redis's Lua runs
// it on glibc: false where it gives nil.
func ToNumber(s string) (float64, bool) {
	if f, ok := plainInt(s); ok {
		return f, true
	}
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

// plainInt reads the common case at once: an optional '-' and at most 15
// decimal digits, which strtod reads exactly ("-0" is -0).
func plainInt(s string) (float64, bool) {
	digits := s
	if len(s) > 0 && s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	f := float64(n)
	if len(digits) < len(s) {
		f = -f
	}
	return f, true
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

// Arg is the string a Redis 7.0 server hands a command for a Lua number
// argument of redis.call: C's printf("%.17g"), so 3 is "3", 0.1 is
// "0.10000000000000001", -0 is "-0" and 1e17 is "1e+17".
func Arg(f float64) string {
	switch {
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// Go's 'g' with a precision drops trailing zeros and switches to an
	// exponent where C's does.
	return strconv.FormatFloat(f, 'g', 17, 64)
}
