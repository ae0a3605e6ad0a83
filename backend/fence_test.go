package backend

import (
	"errors"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"testing"
	"time"

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

// TestMemoryFenceMalformed: the in-memory node reads a spoilt counter as
// an error and overwrites it on a raise, as a Redis node does.
func TestMemoryFenceMalformed(t *testing.T) {
	m := NewMemory("m")
	defer m.Close()
	m.mu.Lock()
	m.store("f", "99999999999999999", m.now().Add(time.Minute))
	m.mu.Unlock()
	if v, err := nodetest.ReadFence(t.Context(), m, "f"); !errors.Is(err, quorum.ErrBadFence) {
		t.Fatalf("ReadFence = %d, %v; want ErrBadFence", v, err)
	}
	if v, err := nodetest.RaiseFence(t.Context(), m, "f", 5, time.Minute); err != nil || v != 5 {
		t.Fatalf("RaiseFence = %d, %v; want 5", v, err)
	}
	if v, err := nodetest.ReadFence(t.Context(), m, "f"); err != nil || v != 5 {
		t.Fatalf("ReadFence after the raise = %d, %v; want 5", v, err)
	}
}
