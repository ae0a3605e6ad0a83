// Package glob matches strings against Redis's glob-style patterns, as
// PSUBSCRIBE and PUBSUB CHANNELS read them: * any run, ? one byte,
// [abc] [^abc] [a-z] a class, and \ quoting the next byte.
package glob

// Match reports whether s matches pattern, byte by byte as Redis does.
func Match(pattern, s string) bool {
	// The last * seen and where s stood then: on a mismatch, let that *
	// swallow one more byte and try again. Each * only moves forward, so
	// the work is bounded by len(pattern)*len(s).
	starP, starS := -1, 0
	p, i := 0, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				starP, starS = p, i
				p++
				continue
			}
			if n, ok := matchOne(pattern[p:], s[i]); ok {
				p += n
				i++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		p, i = starP+1, starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches b against the token at the start of pattern (never a
// *): it returns the token's length and whether b matches it.
func matchOne(pattern string, b byte) (int, bool) {
	switch pattern[0] {
	case '?':
		return 1, true
	case '[':
		return matchClass(pattern, b)
	case '\\':
		if len(pattern) > 1 {
			return 2, pattern[1] == b
		}
	}
	return 1, pattern[0] == b
}

// matchClass matches b against the class at the start of pattern. An
// unterminated class runs to the end of the pattern, as in Redis.
func matchClass(pattern string, b byte) (int, bool) {
	i, not, hit := 1, false, false
	if i < len(pattern) && pattern[i] == '^' {
		not = true
		i++
	}
	for ; i < len(pattern) && pattern[i] != ']'; i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			hit = hit || pattern[i] == b
		case i+2 < len(pattern) && pattern[i+1] == '-':
			lo, hi := pattern[i], pattern[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			hit = hit || (b >= lo && b <= hi)
			i += 2
		default:
			hit = hit || pattern[i] == b
		}
	}
	if i < len(pattern) {
		i++ // the closing ]
	}
	return i, hit != not
}
