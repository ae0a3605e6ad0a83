package proxy

import (
	"math"
	"strconv"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/internal/oneline"
)

var _ commands.Writer = (*Writer)(nil)

// Writer appends RESP replies to a byte buffer. It encodes each element in
// the protocol that proto reports at the moment of the write, because a
// command can switch the protocol while replying (HELLO 3 answers with a
// RESP3 map).
type Writer struct {
	buf   []byte
	proto func() int
}

// NewWriter returns a Writer that encodes in the protocol proto returns
// (2 or 3; anything else is RESP2). A nil proto means RESP2.
func NewWriter(proto func() int) *Writer {
	return &Writer{proto: proto}
}

// Bytes returns the encoded replies. The slice is reused after Reset.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset empties the buffer, keeping its capacity.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

func (w *Writer) resp3() bool { return w.proto != nil && w.proto() == 3 }

// WriteSimple writes +s. CR and LF would end the reply early, so they
// become spaces, as Redis does.
func (w *Writer) WriteSimple(s string) { w.line('+', s) }

// WriteError writes -s, with CR and LF turned into spaces.
func (w *Writer) WriteError(s string) { w.line('-', s) }

func (w *Writer) line(prefix byte, s string) {
	w.buf = append(w.buf, prefix)
	w.buf = append(w.buf, oneline.Of(s)...)
	w.buf = append(w.buf, '\r', '\n')
}

// WriteBulk writes $len\r\nb\r\n.
func (w *Writer) WriteBulk(b []byte) {
	w.header('$', len(b))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// WriteBulkString writes s as a bulk string.
func (w *Writer) WriteBulkString(s string) {
	w.header('$', len(s))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// WriteInt writes :n.
func (w *Writer) WriteInt(n int64) {
	w.buf = append(w.buf, ':')
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// WriteNull writes $-1 (RESP2) or _ (RESP3).
func (w *Writer) WriteNull() {
	if w.resp3() {
		w.buf = append(w.buf, '_', '\r', '\n')
		return
	}
	w.buf = append(w.buf, '$', '-', '1', '\r', '\n')
}

// WriteNullArray writes *-1 (RESP2) or _ (RESP3).
func (w *Writer) WriteNullArray() {
	if w.resp3() {
		w.buf = append(w.buf, '_', '\r', '\n')
		return
	}
	w.buf = append(w.buf, '*', '-', '1', '\r', '\n')
}

// WriteArray starts an array of n elements.
func (w *Writer) WriteArray(n int) { w.header('*', n) }

// WriteMap starts a map of n pairs: %n in RESP3, a flat array of 2n in RESP2.
func (w *Writer) WriteMap(n int) {
	if w.resp3() {
		w.header('%', n)
		return
	}
	w.header('*', 2*n)
}

// WriteSet starts a set of n elements: ~n in RESP3, an array in RESP2.
func (w *Writer) WriteSet(n int) {
	if w.resp3() {
		w.header('~', n)
		return
	}
	w.header('*', n)
}

// WriteDouble writes f as Redis 7.0 does: "%.17g" digits, inf/-inf/nan
// spelled out; a RESP3 double, or a bulk string in RESP2.
func (w *Writer) WriteDouble(f float64) { w.WriteDoubleText(formatDouble(f)) }

// WriteDoubleText writes the double spelled s: ,s in RESP3, a bulk
// string in RESP2.
func (w *Writer) WriteDoubleText(s string) {
	if w.resp3() {
		w.line(',', s)
		return
	}
	w.WriteBulkString(s)
}

// WriteBool writes #t or #f in RESP3, :1 or :0 in RESP2.
func (w *Writer) WriteBool(b bool) {
	switch {
	case !w.resp3() && b:
		w.WriteInt(1)
	case !w.resp3():
		w.WriteInt(0)
	case b:
		w.buf = append(w.buf, '#', 't', '\r', '\n')
	default:
		w.buf = append(w.buf, '#', 'f', '\r', '\n')
	}
}

// WriteBigNumber writes (s in RESP3, a bulk string in RESP2.
func (w *Writer) WriteBigNumber(s string) {
	if w.resp3() {
		w.line('(', s)
		return
	}
	w.WriteBulkString(s)
}

func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// WriteVerbatim writes a verbatim string (=len\r\nfmt:s in RESP3), or s as
// a bulk string in RESP2. The format must be three bytes; anything else
// becomes "txt", since clients split the payload at the fourth byte.
func (w *Writer) WriteVerbatim(format, s string) {
	if !w.resp3() {
		w.WriteBulkString(s)
		return
	}
	if len(format) != 3 {
		format = "txt"
	}
	w.header('=', len(s)+4)
	w.buf = append(w.buf, format...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// WritePush starts a push of n elements: >n in RESP3, an array in RESP2.
func (w *Writer) WritePush(n int) {
	if w.resp3() {
		w.header('>', n)
		return
	}
	w.header('*', n)
}

func (w *Writer) header(prefix byte, n int) {
	w.buf = append(w.buf, prefix)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}
