package embedded

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// TestMemoryFenceMalformed: the in-memory node reads a spoilt counter as
// an error and overwrites it on a raise, as a Redis node does.
func TestMemoryFenceMalformed(t *testing.T) {
	m := New("m")
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
