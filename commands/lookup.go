package commands

import "strings"

// lookup finds a command by name in any case. Names of the table are short,
// so the lower-casing happens in a stack buffer: a command costs no
// allocation for its name.
func lookup(name []byte) (*command, bool) {
	var buf [16]byte
	if len(name) > len(buf) {
		c, ok := table[strings.ToLower(string(name))]
		return c, ok
	}
	c, ok := table[string(lowerInto(&buf, name))]
	return c, ok
}

// lowerInto writes name, ASCII lower-cased, into buf; len(name) <= len(buf).
func lowerInto(buf *[16]byte, name []byte) []byte {
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(name)]
}
