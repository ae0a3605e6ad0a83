package commands

import "strings"

// lookup finds a command by name in any case.
func lookup(name []byte) (*command, bool) { return lookupFold(table, name) }

// lookupFold looks name up in m, whose keys are lower case, in any case.
// The names are short, so the lower-casing happens in a stack buffer: a
// command costs no allocation for its name.
func lookupFold[V any](m map[string]V, name []byte) (V, bool) {
	var buf [16]byte
	if len(name) > len(buf) {
		v, ok := m[strings.ToLower(string(name))]
		return v, ok
	}
	v, ok := m[string(lowerInto(&buf, name))]
	return v, ok
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
