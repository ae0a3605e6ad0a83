package proxy

import "strconv"

// splitInline splits an inline request line (without its "\n", or
// "\r\n") into arguments by redis-server's rules, so that a line means
// the same to the proxy as to Redis:
//
//   - blanks (space, \t, \n, \v, \f, \r) separate arguments, though only
//     space, \t, \n and \r end an unquoted one (\v and \f inside it are
//     kept, as Redis keeps them);
//   - "double quotes" take \xHH and the escapes \n \r \t \b \a; any other
//     escaped byte stands for itself (\" \\ …);
//   - 'single quotes' take only \' as an escape;
//   - a quote may open inside an unquoted argument (a"b c" is one
//     argument, ab c), and the closing quote ends the argument: it must
//     be followed by a blank or the end of the line ("a"b is unbalanced).
//
// It reports false for unbalanced quotes. A NUL byte never reaches it:
// Redis looks for the end of an inline line with strchr, so a line with a
// NUL in it never ends, and the reader treats it so.
func splitInline(line []byte) ([][]byte, bool) {
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		arg, next, ok := inlineArg(line, i)
		if !ok {
			return nil, false
		}
		args = append(args, arg)
		i = next
	}
}

func isBlank(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// inlineArg reads the argument that starts at line[i] and returns it with
// the index after it.
func inlineArg(line []byte, i int) ([]byte, int, bool) {
	arg := []byte{}
	for ; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t', '\n', '\r':
			return arg, i, true
		case '"':
			return doubleQuoted(line, i+1, arg)
		case '\'':
			return singleQuoted(line, i+1, arg)
		default:
			arg = append(arg, c)
		}
	}
	return arg, i, true
}

// doubleQuoted appends the quoted part that starts at line[i] to arg.
func doubleQuoted(line []byte, i int, arg []byte) ([]byte, int, bool) {
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			b, _ := strconv.ParseUint(string(line[i+2:i+4]), 16, 8)
			arg = append(arg, byte(b))
			i += 4
		case c == '\\' && i+1 < len(line):
			arg = append(arg, unescape(line[i+1]))
			i += 2
		case c == '"':
			return closeQuote(line, i, arg)
		default:
			arg = append(arg, c)
			i++
		}
	}
	return nil, 0, false
}

// singleQuoted appends the quoted part that starts at line[i] to arg.
func singleQuoted(line []byte, i int, arg []byte) ([]byte, int, bool) {
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			arg = append(arg, '\'')
			i += 2
		case c == '\'':
			return closeQuote(line, i, arg)
		default:
			arg = append(arg, c)
			i++
		}
	}
	return nil, 0, false
}

// closeQuote ends an argument at the closing quote line[i], which must be
// followed by a blank or the end of the line.
func closeQuote(line []byte, i int, arg []byte) ([]byte, int, bool) {
	if i+1 < len(line) && !isBlank(line[i+1]) {
		return nil, 0, false
	}
	return arg, i + 1, true
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
