package wire

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

// Reply is one parsed reply. The mux's connections speak RESP2; only a
// request that wants RESP3 is sent between HELLO 3 and HELLO 2, so its
// reply, and HELLO 3's own, carry the RESP3 types as well.
type Reply struct {
	// '+', '-', ':', '$', '*'; RESP3: '%' (Elems: key, value…), '~',
	// ',' and '(' (Str: the digits), '#' (Num: 1 or 0), '_' (Null), '='
	// (Str: "fmt:text"). A blob error ('!') is read as '-'.
	Kind  byte
	Null  bool // $-1, *-1 or _
	Str   string
	Num   int64
	Elems []Reply
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

// ReplyCode is Code, for a caller that classifies server error replies
// through an interface of its own rather than this type.
func (e ServerError) ReplyCode() string { return e.Code }

// Is matches a target of the same Code and no Text.
func (e ServerError) Is(target error) bool {
	t, ok := target.(ServerError)
	return ok && t.Text == "" && t.Code == e.Code
}

func newServerError(text string) ServerError {
	code, _, _ := strings.Cut(text, " ")
	return ServerError{Code: code, Text: text}
}

// ParseReply parses one reply at the start of b. It returns the number of
// bytes it used, or n == 0 when b does not hold a whole reply yet. Parsing
// from a buffer the reader owns (rather than from a bufio.Reader) lets a read
// that timed out resume where it stopped.
func ParseReply(b []byte) (r Reply, n int, err error) {
	line, n, err := cutLine(b)
	if n == 0 || err != nil {
		return Reply{}, 0, err
	}
	if len(line) == 0 {
		return Reply{}, 0, errProtocol
	}
	r.Kind = line[0]
	switch r.Kind {
	case '+', '-':
		if string(line) == "+OK" {
			r.Str = "OK" // the common status reply, without an allocation
		} else {
			r.Str = string(line[1:])
		}
		return r, n, nil
	case ':':
		r.Num, err = atoi(line[1:])
		return r, n, err
	case '$':
		return parseBulk(b, line, n)
	case '*':
		return parseArray(b, line, n)
	}
	return parseRESP3(b, line, n)
}

// parseRESP3 parses the RESP3 types, as parseReply does.
func parseRESP3(b, line []byte, n int) (Reply, int, error) {
	r := Reply{Kind: line[0]}
	switch r.Kind {
	case ',', '(':
		r.Str = string(line[1:])
		return r, n, nil
	case '#':
		switch string(line[1:]) {
		case "t":
			r.Num = 1
		case "f":
		default:
			return Reply{}, 0, errProtocol
		}
		return r, n, nil
	case '_':
		r.Null = true
		return r, n, nil
	case '=', '!':
		r, n, err := parseBulk(b, line, n)
		if r.Kind = line[0]; r.Kind == '!' {
			r.Kind = '-'
		}
		return r, n, err
	case '~':
		r, n, err := parseArray(b, line, n)
		r.Kind = '~'
		return r, n, err
	case '%':
		return parseMap(b, line, n)
	case '|':
		// An attribute comes ahead of the reply it describes: skipped.
		_, m, err := parseMap(b, line, n)
		if err != nil || m == 0 {
			return Reply{}, 0, err
		}
		next, k, err := ParseReply(b[m:])
		if err != nil || k == 0 {
			return Reply{}, 0, err
		}
		return next, m + k, nil
	}
	return Reply{}, 0, errProtocol
}

// parseMap parses a map of count pairs as 2*count elements.
func parseMap(b, line []byte, n int) (Reply, int, error) {
	count, err := atoi(line[1:])
	if err != nil || count < 0 || count > math.MaxInt32 {
		return Reply{}, 0, errProtocol
	}
	return parseElems(b, Reply{Kind: '%'}, 2*count, n)
}

func parseBulk(b, line []byte, n int) (Reply, int, error) {
	size, err := atoi(line[1:])
	if err != nil {
		return Reply{}, 0, err
	}
	r := Reply{Kind: '$'}
	if size < 0 {
		r.Null = true
		return r, n, nil
	}
	end := n + int(size) + 2
	if len(b) < end {
		return Reply{}, 0, nil
	}
	r.Str = string(b[n : n+int(size)])
	return r, end, nil
}

func parseArray(b, line []byte, n int) (Reply, int, error) {
	count, err := atoi(line[1:])
	if err != nil {
		return Reply{}, 0, err
	}
	r := Reply{Kind: '*'}
	if count < 0 {
		r.Null = true
		return r, n, nil
	}
	return parseElems(b, r, count, n)
}

// parseElems parses the count replies of an aggregate r from b[n:]. Each
// takes 3 bytes at least: while fewer are here, the aggregate is not
// whole yet, and nothing is allocated for it (a large reply is parsed
// again as each read adds to it, and a bogus count never allocates).
func parseElems(b []byte, r Reply, count int64, n int) (Reply, int, error) {
	if count > int64(len(b)-n)/3 {
		return Reply{}, 0, nil
	}
	r.Elems = make([]Reply, count)
	for i := range r.Elems {
		e, m, err := ParseReply(b[n:])
		if err != nil || m == 0 {
			return Reply{}, 0, err
		}
		r.Elems[i] = e
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

// Err turns an error reply into an error.
func (r Reply) Err() error {
	if r.Kind == '-' {
		return newServerError(r.Str)
	}
	return nil
}

// Bulk is the reply's string, when it is a bulk string that is not null.
func (r Reply) Bulk() (string, bool) {
	if r.Kind == '$' && !r.Null {
		return r.Str, true
	}
	return "", false
}
