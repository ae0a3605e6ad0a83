package proxy

import (
	"reflect"
	"testing"
)

// TestSplitInline pins the split redis-server 7 makes of each line (the
// hostiletest package compares the two servers on the wire).
func TestSplitInline(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{`ECHO "a\x41"`, []string{"ECHO", "aA"}},
		{`ECHO 'a\nb'`, []string{"ECHO", `a\nb`}},
		{"PING\tx", []string{"PING", "x"}},
		{"PING\vx \fy", []string{"PING\vx", "y"}},
		{"\v\fPING\r\n", []string{"PING"}},
		{`a"b c"`, []string{"ab c"}},
		{`ECHO "" ''`, []string{"ECHO", "", ""}},
		{`"\xZZ" "\x4" "\x4a\x4A"`, []string{"xZZ", "x4", "JJ"}},
		{`"\b\a\q\\\"\n\r\t"`, []string{"\b\aq\\\"\n\r\t"}},
		{`'it\'s' 'a\"'`, []string{"it's", `a\"`}},
		{"\"x\"\vy", []string{"x", "y"}},
		{`a\x41`, []string{`a\x41`}},
		{"   ", []string{}},
		{`"a"b`, nil},
		{`'a'b`, nil},
		{`"abc`, nil},
		{`"ab\`, nil},
		{`'ab\'`, nil},
	}
	for _, tt := range tests {
		got, ok := splitInline([]byte(tt.line))
		if tt.want == nil {
			if ok {
				t.Errorf("%q split into %q; want unbalanced quotes", tt.line, got)
			}
			continue
		}
		s := []string{}
		for _, a := range got {
			s = append(s, string(a))
		}
		if !ok || !reflect.DeepEqual(s, tt.want) {
			t.Errorf("%q = %q, %v; want %q", tt.line, s, ok, tt.want)
		}
	}
}
