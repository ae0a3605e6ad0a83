package faults

import (
	"bytes"
	"strconv"
)

// maxPending bounds what the counter buffers for one incomplete command:
// the ErrorReply mode only ever sees small lock commands.
const maxPending = 1 << 20

// cmdCounter finds where RESP commands end in a byte stream, so that the
// ErrorReply mode answers each command exactly once, however the client's
// writes were split or batched.
type cmdCounter struct {
	pending []byte
}

// feed adds b and returns how many commands it completed; false on bytes
// that are not RESP (the link is then reset).
func (c *cmdCounter) feed(b []byte) (int, bool) {
	c.pending = append(c.pending, b...)
	n := 0
	for {
		used, ok, complete := parseCommand(c.pending)
		if !ok {
			return n, false
		}
		if !complete {
			break
		}
		c.pending = c.pending[used:]
		n++
	}
	if len(c.pending) > maxPending {
		return n, false
	}
	c.pending = append([]byte(nil), c.pending...) // drop the consumed prefix's backing array
	return n, true
}

// parseCommand reports the length of the first complete command in b.
func parseCommand(b []byte) (used int, ok, complete bool) {
	if len(b) == 0 {
		return 0, true, false
	}
	if b[0] != '*' {
		i := bytes.IndexByte(b, '\n')
		return i + 1, true, i >= 0 // an inline command ends at its newline
	}
	count, off, ok, complete := parseLen(b, 0)
	if !ok || !complete {
		return 0, ok, complete
	}
	for range count {
		if off >= len(b) {
			return 0, true, false
		}
		if b[off] != '$' {
			return 0, false, false
		}
		size, next, ok, complete := parseLen(b, off)
		if !ok || !complete {
			return 0, ok, complete
		}
		off = next + size + 2
		if off > len(b) {
			return 0, true, false
		}
	}
	return off, true, true
}

// parseLen reads "<prefix><n>\r\n" at b[at:], returning n and the offset after it.
func parseLen(b []byte, at int) (n, next int, ok, complete bool) {
	i := bytes.Index(b[at:], []byte("\r\n"))
	if i < 0 {
		return 0, 0, true, false
	}
	n, err := strconv.Atoi(string(b[at+1 : at+i]))
	if err != nil || n < 0 || n > maxPending {
		return 0, 0, false, false
	}
	return n, at + i + 2, true, true
}
