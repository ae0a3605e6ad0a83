package wire

import (
	"errors"
	"fmt"
	"testing"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		in   string
		want Reply
		n    int
	}{
		{"+OK\r\n", Reply{Kind: '+', Str: "OK"}, 5},
		{"-ERR x\r\n", Reply{Kind: '-', Str: "ERR x"}, 8},
		{":-12\r\n", Reply{Kind: ':', Num: -12}, 6},
		{"$-1\r\n", Reply{Kind: '$', Null: true}, 5},
		{"$3\r\nabc\r\n+x", Reply{Kind: '$', Str: "abc"}, 9},
		{"*2\r\n$1\r\na\r\n:5\r\n", Reply{Kind: '*', Elems: []Reply{{Kind: '$', Str: "a"}, {Kind: ':', Num: 5}}}, 15},
		// RESP3, as a script wanted so answers
		{"%1\r\n$1\r\na\r\n:1\r\n", Reply{Kind: '%', Elems: []Reply{{Kind: '$', Str: "a"}, {Kind: ':', Num: 1}}}, 15},
		{"~1\r\n$1\r\na\r\n", Reply{Kind: '~', Elems: []Reply{{Kind: '$', Str: "a"}}}, 11},
		{",3.5\r\n", Reply{Kind: ',', Str: "3.5"}, 6},
		{"(12345678901234567890\r\n", Reply{Kind: '(', Str: "12345678901234567890"}, 23},
		{"#t\r\n", Reply{Kind: '#', Num: 1}, 4},
		{"#f\r\n", Reply{Kind: '#'}, 4},
		{"_\r\n", Reply{Kind: '_', Null: true}, 3},
		{"=9\r\ntxt:hello\r\n", Reply{Kind: '=', Str: "txt:hello"}, 15},
		{"!5\r\nERR x\r\n", Reply{Kind: '-', Str: "ERR x"}, 11},
		{"|1\r\n+a\r\n+b\r\n:7\r\n", Reply{Kind: ':', Num: 7}, 16},
		{"%1\r\n$1\r\na\r\n", Reply{}, 0},
		{"*2\r\n$1\r\na\r\n", Reply{}, 0},        // incomplete
		{"*1000000000000\r\n:1\r\n", Reply{}, 0}, // incomplete, and not allocated for
		{"%1000000000\r\n", Reply{}, 0},
		{"*0\r\n", Reply{Kind: '*', Elems: []Reply{}}, 4},
		{"$3\r\nab", Reply{}, 0},
		{"+OK", Reply{}, 0},
	}
	for _, tc := range tests {
		got, n, err := ParseReply([]byte(tc.in))
		if err != nil || n != tc.n || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseReply(%q) = %+v, %d, %v; want %+v, %d", tc.in, got, n, err, tc.want, tc.n)
		}
	}
	for _, bad := range []string{"?x\r\n", ":abc\r\n", "+OK\n", "\r\n", "#x\r\n", "%-1\r\n"} {
		if _, _, err := ParseReply([]byte(bad)); !errors.Is(err, errProtocol) {
			t.Errorf("parseReply(%q): err = %v, want errProtocol", bad, err)
		}
	}
}
