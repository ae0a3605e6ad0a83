package commands

import (
	"strings"
	"testing"
)

func TestLockOptionsParse(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{"LOCK", "a", "1000", "KEEPALIVE", "keepalive"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "FENCE", "FENCE"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "WAIT", "1", "wait", "2"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "OWNER"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "OWNER", ""}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "TOKEN", ""}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "KEEP"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "OWNER", "x", "TOKEN", "t"}, "-ERR redlockd does not support this form of 'lock': TOKEN and OWNER"},
		{[]string{"LOCK", "a", "1000", "fence", "Wait", "0", "keepalive", "owner", "x"}, "[$owner:1:x:"},
		{[]string{"LOCK", "b", "1000", "TOKEN", "t", "FENCE"}, "[$t :"},
	}
	for _, tt := range tests {
		if got := f.do(tt.cmd...); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%v = %q, want prefix %q", tt.cmd, got, tt.want)
		}
	}
	if got := f.do("LOCK", "b", "1000", "FENCE"); got != "nil" {
		t.Errorf("LOCK FENCE on a held key = %q", got)
	}
	_, rest := lockReply(t, f.do("LOCK", "c", "1000", "FENCE"))
	if len(rest) != 2 || rest[1] <= 0 {
		t.Errorf("LOCK FENCE reply %v has no positive fence", rest)
	}
}
