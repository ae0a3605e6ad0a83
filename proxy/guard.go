package proxy

import (
	"fmt"
	"io"
	"math"
	"net"
	"strconv"

	"github.com/redlockd/redlockd/internal/resp"
)

// Limits of the request stream, as redis-server 7 has them.
const (
	// maxInlineLen is the longest inline command, and the longest count
	// line of a multibulk request.
	maxInlineLen = 64 << 10
	// protoMaxBulkLen is Redis's proto-max-bulk-len default.
	protoMaxBulkLen = 512 << 20
	// DefaultMaxRequestBytes is the default of Options.MaxRequestBytes.
	DefaultMaxRequestBytes = 512 << 20
	// bigBulk is the bulk size from which the guard forwards a request
	// before it is complete.
	bigBulk = 64 << 10
	// maxKeptLine caps the inline buffer a connection keeps between
	// requests.
	maxKeptLine = 4 << 10
)

// guardConn checks the request stream before redcon parses it, so that
// malformed input gets the reply redis-server gives the same bytes (redcon
// accepts some of it, and waits forever on a count line or inline request
// that never ends), and so that no single request can make a connection
// buffer more than a fixed amount: redcon grows its buffer for as long as
// a request is incomplete.
//
// It only ever runs on the connection's own goroutine (redcon's reader),
// so it needs no lock.
type guardConn struct {
	net.Conn
	maxRequest int

	out []byte // checked bytes not yet handed to redcon
	// ready is how many bytes of out end at a request boundary. redcon
	// gets only those: it parses an incomplete request again from its
	// start on every read, which is quadratic in a request's arguments
	// (seconds of CPU for a few MB of empty arguments arriving in pieces).
	// The bytes of a big bulk go through as they come, so that a large
	// value is not buffered twice; its few arguments are cheap to reparse.
	ready int
	big   bool   // inside a bulk of at least bigBulk bytes
	line  []byte // the count line or inline request being collected
	nul   bool   // the inline request has a NUL: its end is never found
	st    guardState
	args  int // arguments left in the multibulk request
	left  int // bytes left of the current bulk, CRLF included
	rbuf  []byte
	size  int // bytes of the current request so far
	fail  string
	err   error // the underlying connection's read error, once seen
}

type guardState int

const (
	stStart  guardState = iota // at a request boundary
	stInline                   // inside an inline request
	stCount                    // collecting "*<n>\r\n"
	stHeader                   // collecting "$<n>\r\n"
	stBulk                     // skipping a bulk's bytes and its CRLF
)

func newGuardConn(c net.Conn, maxRequest int) *guardConn {
	if maxRequest <= 0 {
		maxRequest = DefaultMaxRequestBytes
	}
	return &guardConn{Conn: c, maxRequest: maxRequest}
}

// Read hands redcon only bytes that passed the check. On a protocol error
// it first hands over what came before it, then writes Redis's error reply
// and reports EOF, which makes redcon close the connection, as Redis does.
func (g *guardConn) Read(p []byte) (int, error) {
	for g.ready == 0 {
		if g.fail != "" {
			g.rejectOnce()
			return 0, io.EOF
		}
		if g.err != nil {
			return 0, g.err
		}
		if g.rbuf == nil {
			g.rbuf = make([]byte, 16<<10)
		}
		n, err := g.Conn.Read(g.rbuf)
		g.err = err
		g.scan(g.rbuf[:n])
	}
	n := copy(p, g.out[:g.ready])
	g.ready -= n
	switch {
	case n < len(g.out):
		g.out = g.out[n:]
	case cap(g.out) > bigBulk:
		g.out = nil // a big request's buffer is not kept
	default:
		g.out = g.out[:0] // the next request reuses the buffer
	}
	return n, nil
}

// Write skips empty writes: redcon flushes its own writer after every read
// batch, and the replies went out through connState.flush already, so its
// flush is empty; on a socket an empty write would still be a syscall (and a
// write deadline).
func (g *guardConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return g.Conn.Write(p)
}

func (g *guardConn) rejectOnce() {
	if g.fail == "-" {
		return
	}
	if g.fail != "+" { // "+" closes without a reply
		g.Conn.Write([]byte("-ERR Protocol error: " + g.fail + "\r\n"))
	}
	g.fail = "-"
}

// scan runs the check over b, appending what redcon may see to out.
func (g *guardConn) scan(b []byte) {
	for i := 0; i < len(b) && g.fail == ""; i++ {
		c := b[i]
		g.size++
		if g.size > g.maxRequest {
			g.fail = "+" // Redis closes a client over its query buffer limit silently
			return
		}
		switch g.st {
		case stStart:
			g.start(c)
		case stInline:
			g.inline(c)
		case stCount, stHeader:
			g.collect(c)
		case stBulk:
			g.out = append(g.out, c)
			if g.left--; g.left == 0 {
				g.bulkDone()
			}
		}
	}
	if g.st == stBulk && g.big {
		g.ready = len(g.out)
	}
}

func (g *guardConn) start(c byte) {
	g.size = 1
	if c == '*' {
		g.st, g.line = stCount, append(g.line[:0], c)
		return
	}
	g.st, g.line, g.nul = stInline, g.line[:0], false
	g.inline(c)
}

// inline collects an inline request. At its end redcon gets it as a
// multibulk, split by Redis's rules: redcon's own split differs (no \x
// escapes, escapes in single quotes, only spaces between arguments).
func (g *guardConn) inline(c byte) {
	switch {
	case c == 0:
		g.nul = true // Redis looks for the newline with strchr: it stops here
	case c == '\n' && !g.nul:
		g.endInline()
		return
	}
	g.line = append(g.line, c)
	if g.size > maxInlineLen {
		g.fail = "too big inline request"
	}
}

func (g *guardConn) endInline() {
	line := g.line
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	args, ok := splitInline(line)
	if !ok {
		g.fail = "unbalanced quotes in request"
		return
	}
	if len(args) > 0 { // a blank line is no request, as in Redis
		g.out = resp.AppendCommand(g.out, args)
	}
	if cap(g.line) > maxKeptLine {
		g.line = nil // a long line's buffer is not kept
	} else {
		g.line = g.line[:0]
	}
	g.endRequest()
}

func (g *guardConn) endRequest() { g.st, g.size, g.ready = stStart, 0, len(g.out) }

// collect gathers a count line; redcon then parses it from out, so only
// the limits redcon lacks are checked here.
func (g *guardConn) collect(c byte) {
	g.line = append(g.line, c)
	if g.st == stHeader && len(g.line) == 1 && c != '$' {
		g.fail = fmt.Sprintf("expected '$', got '%c'", c)
		return
	}
	if c != '\n' {
		if len(g.line) > maxInlineLen {
			if g.st == stCount {
				g.fail = "too big mbulk count string"
			} else {
				g.fail = "too big bulk count string"
			}
		}
		return
	}
	n, numeric := parseCount(g.line)
	if g.st == stCount {
		g.countDone(n, numeric)
	} else {
		g.headerDone(n, numeric)
	}
}

func (g *guardConn) countDone(n int64, numeric bool) {
	switch {
	case numeric && n <= 0:
		g.endRequest() // Redis ignores an empty or negative multibulk
		return
	case numeric && n > math.MaxInt32:
		g.fail = "invalid multibulk length"
		return
	}
	g.out = append(g.out, g.line...)
	if !numeric {
		g.endRequest() // redcon answers a malformed count itself
		return
	}
	g.st, g.args = stHeader, int(n)
	g.line = g.line[:0]
}

func (g *guardConn) headerDone(n int64, numeric bool) {
	if !numeric || n < 0 {
		g.out = append(g.out, g.line...) // redcon has the matching error
		g.endRequest()
		return
	}
	if n > protoMaxBulkLen {
		g.fail = "invalid bulk length"
		return
	}
	g.out = append(g.out, g.line...)
	g.line = g.line[:0]
	g.st, g.left, g.big = stBulk, int(n)+2, n >= bigBulk
}

func (g *guardConn) bulkDone() {
	g.args--
	if g.args == 0 {
		g.endRequest()
		return
	}
	g.st, g.line = stHeader, g.line[:0]
}

// parseCount reads the number of "*<n>\r\n" or "$<n>\r\n".
func parseCount(line []byte) (int64, bool) {
	s := string(line[1:])
	if len(s) >= 2 && s[len(s)-2] == '\r' {
		s = s[:len(s)-2]
	} else {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
