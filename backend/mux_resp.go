package backend

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
)

// errProtocol means the server sent bytes that are not RESP2: the
// connection can no longer be trusted to pair replies with requests.
var errProtocol = errors.New("backend: protocol error in reply")

// reply is one parsed reply. The mux's connections speak RESP2; only a
// client's script wanted in RESP3 (quorum.Script.RESP3) is sent between
// HELLO 3 and HELLO 2, so its reply, and HELLO 3's own, carry the RESP3
// types as well.
type reply struct {
	// '+', '-', ':', '$', '*'; RESP3: '%' (elems: key, value…), '~',
	// ',' and '(' (str: the digits), '#' (num: 1 or 0), '_' (null), '='
	// (str: "fmt:text"). A blob error ('!') is read as '-'.
	kind  byte
	null  bool // $-1, *-1 or _
	str   string
	num   int64
	elems []reply
}

// ServerError is an error reply of the server (-ERR …, -OOM …, -NOSCRIPT
// …): the server refused the command, as opposed to a network failure.
// Code is the reply's first word. errors.Is(err, ServerError{Code: c})
// holds for every ServerError of code c.
type ServerError struct {
	Code string
	Text string // the whole reply, code included
}

func (e ServerError) Error() string { return e.Text }

// ReplyCode is Code: a ServerError is a quorum.ReplyError.
func (e ServerError) ReplyCode() string { return e.Code }

// Is matches a target of the same Code and no Text.
func (e ServerError) Is(target error) bool {
	t, ok := target.(ServerError)
	return ok && t.Text == "" && t.Code == e.Code
}

// errNoScript is the reply to EVALSHA of a script the server does not hold
// (after a restart or SCRIPT FLUSH).
// It is an error variable, boxed once: errors.Is takes an error.
var errNoScript error = ServerError{Code: "NOSCRIPT"}

func newServerError(text string) ServerError {
	code, _, _ := strings.Cut(text, " ")
	return ServerError{Code: code, Text: text}
}

// parseReply parses one reply at the start of b. It returns the number of
// bytes it used, or n == 0 when b does not hold a whole reply yet. Parsing
// from a buffer the reader owns (rather than from a bufio.Reader) lets a read
// that timed out resume where it stopped.
func parseReply(b []byte) (r reply, n int, err error) {
	line, n, err := cutLine(b)
	if n == 0 || err != nil {
		return reply{}, 0, err
	}
	if len(line) == 0 {
		return reply{}, 0, errProtocol
	}
	r.kind = line[0]
	switch r.kind {
	case '+', '-':
		if string(line) == "+OK" {
			r.str = "OK" // the common status reply, without an allocation
		} else {
			r.str = string(line[1:])
		}
		return r, n, nil
	case ':':
		r.num, err = atoi(line[1:])
		return r, n, err
	case '$':
		return parseBulk(b, line, n)
	case '*':
		return parseArray(b, line, n)
	}
	return parseRESP3(b, line, n)
}

// parseRESP3 parses the RESP3 types, as parseReply does.
func parseRESP3(b, line []byte, n int) (reply, int, error) {
	r := reply{kind: line[0]}
	switch r.kind {
	case ',', '(':
		r.str = string(line[1:])
		return r, n, nil
	case '#':
		switch string(line[1:]) {
		case "t":
			r.num = 1
		case "f":
		default:
			return reply{}, 0, errProtocol
		}
		return r, n, nil
	case '_':
		r.null = true
		return r, n, nil
	case '=', '!':
		r, n, err := parseBulk(b, line, n)
		if r.kind = line[0]; r.kind == '!' {
			r.kind = '-'
		}
		return r, n, err
	case '~':
		r, n, err := parseArray(b, line, n)
		r.kind = '~'
		return r, n, err
	case '%':
		return parseMap(b, line, n)
	case '|':
		// An attribute comes ahead of the reply it describes: skipped.
		_, m, err := parseMap(b, line, n)
		if err != nil || m == 0 {
			return reply{}, 0, err
		}
		next, k, err := parseReply(b[m:])
		if err != nil || k == 0 {
			return reply{}, 0, err
		}
		return next, m + k, nil
	}
	return reply{}, 0, errProtocol
}

// parseMap parses a map of count pairs as 2*count elements.
func parseMap(b, line []byte, n int) (reply, int, error) {
	count, err := atoi(line[1:])
	if err != nil || count < 0 || count > math.MaxInt32 {
		return reply{}, 0, errProtocol
	}
	return parseElems(b, reply{kind: '%'}, 2*count, n)
}

func parseBulk(b, line []byte, n int) (reply, int, error) {
	size, err := atoi(line[1:])
	if err != nil {
		return reply{}, 0, err
	}
	r := reply{kind: '$'}
	if size < 0 {
		r.null = true
		return r, n, nil
	}
	end := n + int(size) + 2
	if len(b) < end {
		return reply{}, 0, nil
	}
	r.str = string(b[n : n+int(size)])
	return r, end, nil
}

func parseArray(b, line []byte, n int) (reply, int, error) {
	count, err := atoi(line[1:])
	if err != nil {
		return reply{}, 0, err
	}
	r := reply{kind: '*'}
	if count < 0 {
		r.null = true
		return r, n, nil
	}
	return parseElems(b, r, count, n)
}

// parseElems parses the count replies of an aggregate r from b[n:]. Each
// takes 3 bytes at least: while fewer are here, the aggregate is not
// whole yet, and nothing is allocated for it (a large reply is parsed
// again as each read adds to it, and a bogus count never allocates).
func parseElems(b []byte, r reply, count int64, n int) (reply, int, error) {
	if count > int64(len(b)-n)/3 {
		return reply{}, 0, nil
	}
	r.elems = make([]reply, count)
	for i := range r.elems {
		e, m, err := parseReply(b[n:])
		if err != nil || m == 0 {
			return reply{}, 0, err
		}
		r.elems[i] = e
		n += m
	}
	return r, n, nil
}

// cutLine returns the line at the start of b without its CRLF, and the
// length including it; 0 when no whole line is there yet.
func cutLine(b []byte) ([]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0:
		return nil, 0, nil
	case i == 0 || b[i-1] != '\r':
		return nil, 0, errProtocol
	}
	return b[:i-1], i + 1, nil
}

func atoi(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, errProtocol
	}
	return n, nil
}

// err turns an error reply into an error.
func (r reply) err() error {
	if r.kind == '-' {
		return newServerError(r.str)
	}
	return nil
}
