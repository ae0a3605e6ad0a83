package backend

import (
	"testing"
	"unsafe"
)

// One call (with its request and inline RESP buffer) is allocated per node
// per command: it must stay within the 320-byte size class. Fields that
// only a few kinds use belong behind a pointer, not inline.
func TestCallSize(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 320 {
		t.Errorf("a call is %d bytes, want at most 320", n)
	}
}
