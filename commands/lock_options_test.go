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

func TestLockKindOptionsRefused(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{"LOCK", "a", "1000", "PERMITS"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "0"}, "-ERR PERMITS must be an integer from 1 to 1000"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "-3"}, "-ERR PERMITS must be an integer from 1 to 1000"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "1001"}, "-ERR PERMITS must be an integer from 1 to 1000"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "99999999999999999999"}, "-ERR value is not an integer or out of range"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "2", "permits", "2"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "SHARED", "shared"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "FAIR", "FAIR"}, "-ERR syntax error"},
		{[]string{"LOCK", "a", "1000", "SHARED", "PERMITS", "2"}, "-ERR redlockd does not support this form of 'lock': SHARED and PERMITS"},
		{[]string{"LOCK", "a", "1000", "SHARED", "OWNER", "x"}, "-ERR redlockd does not support this form of 'lock': OWNER"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "2", "OWNER", "x"}, "-ERR redlockd does not support this form of 'lock': OWNER"},
		{[]string{"LOCK", "a", "1000", "WAIT", "10", "FAIR", "OWNER", "x"}, "-ERR redlockd does not support this form of 'lock': OWNER"},
		{[]string{"LOCK", "a", "1000", "SHARED", "TOKEN", "t"}, "-ERR redlockd does not support this form of 'lock': TOKEN with"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "2", "TOKEN", "t"}, "-ERR redlockd does not support this form of 'lock': TOKEN with"},
		{[]string{"LOCK", "a", "1000", "SHARED", "FAIR"}, "-ERR redlockd does not support this form of 'lock': FAIR with"},
		{[]string{"LOCK", "a", "1000", "PERMITS", "3", "FAIR"}, "-ERR redlockd does not support this form of 'lock': FAIR with"},
		{[]string{"LOCK", "a", "1000", "TOKEN", "permit:2:0:x"}, "-ERR redlockd does not support this form of 'lock': TOKEN permit:"},
	}
	for _, tt := range tests {
		if got := f.do(tt.cmd...); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%v = %q, want prefix %q", tt.cmd, got, tt.want)
		}
	}
	if got := f.do("GET", "a"); got != "nil" {
		t.Errorf("a refused LOCK left %q at a", got)
	}
}
