package backend

import (
	"errors"
	"testing"

	"github.com/redlockd/redlockd/quorum"
)

func TestParseFence(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "42": 42, "007": 7, "9007199254740992": quorum.MaxFence} {
		if v, err := parseFence(s); err != nil || v != want {
			t.Errorf("parseFence(%q) = %d, %v; want %d", s, v, err, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "abc",
		"9007199254740993", "99999999999999999", "00000000000000001"} {
		if v, err := parseFence(s); !errors.Is(err, quorum.ErrBadFence) {
			t.Errorf("parseFence(%q) = %d, %v; want ErrBadFence", s, v, err)
		}
	}
}
