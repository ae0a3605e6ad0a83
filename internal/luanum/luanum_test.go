package luanum

import (
	"math"
	"strconv"
	"testing"
)

// TestToNumber: the values Redis 7.0's Lua gives tonumber of each string
// (seen with redis-server: SELECT of them, and string.format('%.17g')).
func TestToNumber(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"3", 3, true}, {"0x3", 3, true}, {"0X3", 3, true}, {" 3 ", 3, true}, {"\v3\f", 3, true},
		{"3.0", 3, true}, {"1e0", 1, true}, {".3e1", 3, true}, {"3.", 3, true}, {"+3", 3, true},
		{"0x1p1", 2, true}, {"0x1.8p1", 3, true}, {"0x.8", 0.5, true}, {"-0x3", -3, true},
		{"3\x00junk", 3, true}, {"1e-400", 0, true}, {"1e400", math.Inf(1), true},
		{"inf", math.Inf(1), true}, {"-infinity", math.Inf(-1), true}, {"nan", nan, true}, {"nan(abc)", nan, true},
		{"0x", 0, false}, {"3e", 0, false}, {"3abc", 0, false}, {"", 0, false}, {"  ", 0, false},
		{"0x1p", 0, false}, {"nan(", 0, false}, {".", 0, false}, {"-", 0, false}, {"1 2", 0, false},
	} {
		got, ok := ToNumber(tc.in)
		switch {
		case ok != tc.ok:
			t.Errorf("ToNumber(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		case ok && math.IsNaN(tc.want) && !math.IsNaN(got):
			t.Errorf("ToNumber(%q) = %v, want NaN", tc.in, got)
		case ok && !math.IsNaN(tc.want) && got != tc.want:
			t.Errorf("ToNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if f, _ := ToNumber("-0"); f != 0 || !math.Signbit(f) {
		t.Errorf("ToNumber(-0) = %v, want negative zero", f)
	}
	// Plain integers, read at once up to 15 digits, as strtod reads them.
	for _, in := range []string{"007", "-12", "999999999999999", "-999999999999999", "1000000000000000",
		"9007199254740993", "12345678901234567890", "-0001"} {
		want, _ := strconv.ParseFloat(in, 64)
		if got, ok := ToNumber(in); !ok || got != want {
			t.Errorf("ToNumber(%q) = %v, %v, want %v", in, got, ok, want)
		}
	}
}

// TestArg: numbers as Redis 7.0 hands them to a command (seen with
// redis-server: redis.call('set', k, n) then GET).
func TestArg(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{3, "3"}, {-3, "-3"}, {0.1, "0.10000000000000001"}, {1.5, "1.5"}, {1e16, "10000000000000000"},
		{1e17, "1e+17"}, {123456789012345678, "1.2345678901234568e+17"}, {1e-5, "1.0000000000000001e-05"},
		{math.Copysign(0, -1), "-0"}, {0, "0"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
	} {
		if got := Arg(tc.in); got != tc.want {
			t.Errorf("Arg(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
