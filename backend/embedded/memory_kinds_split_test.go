package embedded

import (
	"slices"
	"testing"

	"github.com/redlockd/redlockd/internal/resp"
)

// TestSplitCommand: the words of an encoded command come back as they
// went in, empty and binary ones included, and a truncated or malformed
// encoding, or a count the bytes cannot hold, is refused.
func TestSplitCommand(t *testing.T) {
	for _, words := range [][]string{
		{"GET", "k"},
		{"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "{k}x", ""},
		{"SET", "k\r\n", "\x00\xff", "PX", "10000"},
	} {
		b := resp.AppendCommand(nil, words)
		got, ok := splitCommand(b)
		if !ok || !slices.Equal(got, words) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", b, got, ok, words)
		}
		for cut := range len(b) {
			if got, ok := splitCommand(b[:cut]); ok {
				t.Errorf("splitCommand(%q) = %q: a truncated command read", b[:cut], got)
			}
		}
	}
	for _, bad := range []string{"", "*0\r\n", "*x\r\n", "*1\r\n:1\r\n", "*1\r\n$5\r\nab\r\n", "*99999999\r\n$1\r\na\r\n"} {
		if got, ok := splitCommand([]byte(bad)); ok {
			t.Errorf("splitCommand(%q) = %q, want refused", bad, got)
		}
	}
}
