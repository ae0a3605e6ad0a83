package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"time"
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
	// readSize is the read buffer a connection starts with and keeps.
	readSize = 16 << 10
	// maxKeptRead caps the read buffer a connection keeps once a big
	// request has been served.
	maxKeptRead = 64 << 10
)

// errProtocol is malformed input: the connection gets Redis's error reply,
// then is closed. An empty msg closes it without a reply (a request over
// the size cap, as Redis closes a client over its query buffer limit).
type errProtocol struct{ msg string }

func (e *errProtocol) Error() string {
	if e.msg == "" {
		return "request too big"
	}
	return "Protocol error: " + e.msg
}

// protocolReply is the reply to a protocol error, or nil when the
// connection closes without one.
func protocolReply(err error) []byte {
	var pe *errProtocol
	if !errors.As(err, &pe) || pe.msg == "" {
		return nil
	}
	return []byte("-ERR Protocol error: " + pe.msg + "\r\n")
}

// reader reads a connection's requests. It checks the stream as
// redis-server 7 does while it parses it, in one pass over the bytes:
// malformed input gets the error reply Redis gives the same bytes, and no
// single request can make the connection buffer more than maxRequest
// bytes. Parsing resumes where the last read stopped, so a request that
// arrives in many pieces is not parsed again from its start each time.
//
// The arguments it returns point into its buffer: they stay valid until the
// next call to next.
type reader struct {
	conn       net.Conn
	maxRequest int
	idle       time.Duration // read deadline of each read; 0: none
	// replied, when set, waits for a reply that another goroutine is
	// writing (a command started alone) and returns when the last such
	// reply was written: the client was waiting for it, not idle.
	replied func() time.Time

	buf []byte // buf[:end] was read
	end int
	req int // where the request being parsed starts
	pos int // the next byte to check
	st  readState
	// line is where the count line, bulk header or inline request being
	// checked starts.
	line int
	nul  bool // the inline request has a NUL: its end is never found
	args int  // arguments left in the multibulk request
	left int  // bytes left of the current bulk, CRLF included
	// marks holds the start and end of each argument of the multibulk
	// request being parsed, relative to req: the buffer may move.
	marks []int
	// late is the error of a malformed line or bulk end found inside a
	// multibulk request; it is reported once the request is complete,
	// unless a check that cannot wait fails first.
	late string
	err  error // the first read or protocol error: nothing is read after it
	// scanned counts the bytes checked, each once.
	scanned int

	batch [][][]byte // the requests next returns, reused
	arena [][]byte   // their arguments, reused
}

type readState int

const (
	stStart  readState = iota // at a request boundary
	stInline                  // inside an inline request
	stCount                   // checking "*<n>\r\n"
	stHeader                  // checking "$<n>\r\n"
	stBulk                    // inside a bulk and its CRLF
)

func newReader(c net.Conn, maxRequest int, idle time.Duration) *reader {
	if maxRequest <= 0 {
		maxRequest = DefaultMaxRequestBytes
	}
	return &reader{conn: c, maxRequest: maxRequest, idle: idle}
}

// next returns the complete requests that have arrived, reading until there
// is at least one. A protocol or read error comes after the requests that
// preceded it, by itself.
func (r *reader) next() ([][][]byte, error) {
	r.discard()
	for {
		r.scan()
		if len(r.batch) > 0 {
			return r.batch, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		r.read()
	}
}

// discard drops the requests returned last, and moves the rest of the
// buffer to its start.
func (r *reader) discard() {
	clear(r.batch)
	r.batch = r.batch[:0]
	clear(r.arena)
	r.arena = r.arena[:0]
	switch {
	case r.req == r.end && cap(r.buf) > maxKeptRead:
		r.buf, r.end, r.req, r.pos, r.line = nil, 0, 0, 0, 0
	case r.req == r.end:
		r.end, r.req, r.pos, r.line = 0, 0, 0, 0
	case r.req > 0:
		n := copy(r.buf, r.buf[r.req:r.end])
		r.end, r.pos, r.line = n, r.pos-r.req, r.line-r.req
		r.req = 0
	}
}

// read reads once more into the buffer, growing it when it is full.
func (r *reader) read() {
	if r.idle <= 0 {
		r.readInto()
		return
	}
	since := time.Now()
	for {
		r.conn.SetReadDeadline(since.Add(r.idle))
		r.readInto()
		var ne net.Error
		if r.replied == nil || !errors.As(r.err, &ne) || !ne.Timeout() {
			return
		}
		// Idle since the last reply, if one was written meanwhile.
		last := r.replied()
		if !last.After(since) {
			return
		}
		r.err, since = nil, last
	}
}

// readInto reads once into the free end of the buffer. It never moves the
// bytes already read within the buffer, so that the arguments handed out
// stay intact while a watch reads (a full buffer is copied to a new one).
func (r *reader) readInto() {
	if r.buf == nil {
		r.buf = make([]byte, readSize)
	}
	if r.end == len(r.buf) {
		grown := make([]byte, 2*len(r.buf))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	n, err := r.conn.Read(r.buf[r.end:])
	r.end += n
	if err != nil && r.err == nil {
		r.err = err
	}
}

// scan checks and parses the bytes read so far, appending each complete
// request to the batch. It stops at the first protocol error, and leaves
// it in r.err for after the batch.
func (r *reader) scan() {
	for r.pos < r.end && r.fail() == nil {
		if r.st == stBulk {
			r.skipBulk()
			continue
		}
		if (r.st == stCount || r.st == stHeader) && r.wholeLine() {
			continue
		}
		c := r.buf[r.pos]
		r.pos++
		r.scanned++
		if r.pos-r.req > r.maxRequest {
			r.setFail("")
			return
		}
		switch r.st {
		case stStart:
			r.start(c)
		case stInline:
			r.inline(c)
		case stCount, stHeader:
			r.collect(c)
		}
	}
}

// fail is the protocol error found, if any; a read error leaves the bytes
// before it to be parsed.
func (r *reader) fail() *errProtocol {
	pe, _ := r.err.(*errProtocol)
	return pe
}

// lineLen is the length of the count line, bulk header or inline request
// being checked, if any.
func (r *reader) lineLen() int {
	switch r.st {
	case stInline, stCount, stHeader:
		return r.pos - r.line
	}
	return 0
}

func (r *reader) setFail(msg string) {
	r.err = &errProtocol{msg: msg}
}

func (r *reader) start(c byte) {
	r.line = r.pos - 1
	if c == '*' {
		r.st = stCount
		return
	}
	r.st, r.nul = stInline, false
	r.inline(c)
}

// inline checks an inline request up to its newline, then splits it by
// Redis's rules.
func (r *reader) inline(c byte) {
	switch {
	case c == 0:
		r.nul = true // Redis looks for the newline with strchr: it stops here
	case c == '\n' && !r.nul:
		r.endInline()
		return
	}
	if r.pos-r.req > maxInlineLen {
		r.setFail("too big inline request")
	}
}

func (r *reader) endInline() {
	line := r.buf[r.line : r.pos-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	args, ok := splitInline(line)
	if !ok {
		r.setFail("unbalanced quotes in request")
		return
	}
	if len(args) > 0 { // a blank line is no request, as in Redis
		r.batch = append(r.batch, args)
	}
	r.endRequest()
}

func (r *reader) endRequest() {
	r.st, r.req, r.late = stStart, r.pos, ""
	r.marks = r.marks[:0]
}

// collect checks a count line or a bulk header up to its newline.
func (r *reader) collect(c byte) {
	n := r.pos - r.line // the line so far, c included
	if r.st == stHeader && n == 1 && c != '$' {
		r.setFail(fmt.Sprintf("expected '$', got '%c'", c))
		return
	}
	if c != '\n' {
		if n > maxInlineLen {
			if r.st == stCount {
				r.setFail("too big mbulk count string")
			} else {
				r.setFail("too big bulk count string")
			}
		}
		return
	}
	r.lineDone()
}

// wholeLine takes the rest of a count line or bulk header at once when it
// has arrived and no byte of it can fail a check; otherwise the bytes go
// one by one through collect, which finds the error where Redis does.
func (r *reader) wholeLine() bool {
	if r.st == stHeader && r.pos == r.line && r.buf[r.pos] != '$' {
		return false
	}
	i := bytes.IndexByte(r.buf[r.pos:r.end], '\n')
	if i < 0 {
		return false
	}
	next := r.pos + i + 1
	if next-1-r.line > maxInlineLen || next-r.req > r.maxRequest {
		return false
	}
	r.scanned += next - r.pos
	r.pos = next
	r.lineDone()
	return true
}

// lineDone acts on a count line or bulk header that ends at r.pos.
func (r *reader) lineDone() {
	line := r.buf[r.line:r.pos]
	v, numeric := parseCount(line)
	cr := len(line) >= 2 && line[len(line)-2] == '\r'
	if r.st == stCount {
		r.countDone(v, numeric, cr)
	} else {
		r.headerDone(v, numeric, cr)
	}
}

func (r *reader) countDone(n int64, numeric, cr bool) {
	switch {
	case numeric && n <= 0:
		r.endRequest() // Redis ignores an empty or negative multibulk
	case !numeric || n > math.MaxInt32:
		r.setFail("invalid multibulk length")
	default:
		if !cr {
			r.late = "invalid multibulk length"
		}
		r.st, r.args = stHeader, int(n)
		r.line = r.pos
	}
}

func (r *reader) headerDone(n int64, numeric, cr bool) {
	switch {
	case !numeric || n < 0:
		r.failLate("invalid bulk length")
		return
	case n > protoMaxBulkLen:
		r.setFail("invalid bulk length") // before the held-back error: Redis stops here
		return
	}
	if !cr && r.late == "" {
		r.late = "invalid bulk length"
	}
	r.marks = append(r.marks, r.pos-r.req, r.pos-r.req+int(n))
	r.st, r.left = stBulk, int(n)+2
}

// failLate reports the first error of the request: one found earlier in
// it and held back wins.
func (r *reader) failLate(msg string) {
	if r.late != "" {
		msg = r.late
	}
	r.setFail(msg)
}

// skipBulk passes over the bytes of a bulk that have arrived.
func (r *reader) skipBulk() {
	k := min(r.left, r.end-r.pos)
	if r.pos+k-r.req > r.maxRequest {
		r.setFail("")
		return
	}
	r.pos += k
	r.scanned += k
	r.left -= k
	if r.left > 0 {
		return
	}
	if r.buf[r.pos-2] != '\r' || r.buf[r.pos-1] != '\n' {
		if r.late == "" {
			r.late = "invalid bulk length"
		}
	}
	if r.args--; r.args > 0 {
		r.st, r.line = stHeader, r.pos
		return
	}
	r.endMultibulk()
}

// endMultibulk hands over a complete multibulk request.
func (r *reader) endMultibulk() {
	if r.late != "" {
		r.setFail(r.late)
		return
	}
	base := r.buf[r.req:r.pos]
	start := len(r.arena)
	for i := 0; i < len(r.marks); i += 2 {
		r.arena = append(r.arena, base[r.marks[i]:r.marks[i+1]:r.marks[i+1]])
	}
	r.batch = append(r.batch, r.arena[start:len(r.arena):len(r.arena)])
	r.endRequest()
}

// parseCount reads the number of "*<n>\r\n" or "$<n>\r\n" as
// strconv.ParseInt would, without its allocations.
func parseCount(line []byte) (int64, bool) {
	s := line[1 : len(line)-1]
	if len(s) > 0 && s[len(s)-1] == '\r' {
		s = s[:len(s)-1]
	}
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' || n > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		return -int64(n), n <= 1<<63
	}
	return int64(n), n <= math.MaxInt64
}
