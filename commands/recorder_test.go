package commands

import (
	"fmt"
	"strconv"
	"strings"
)

// recorder is a Writer that renders replies as compact text, so tests can
// compare a reply's shape and content in one string:
// +OK, -ERR …, $token, :5, nil, [a b], {k v}, ~[…], ,1.5
type recorder struct {
	parts []string
	// open counts the elements each unfinished aggregate still expects.
	open []int
	ends []string
}

func (r *recorder) emit(s string) {
	r.parts = append(r.parts, s)
	r.closeDone()
}

func (r *recorder) closeDone() {
	for len(r.open) > 0 {
		top := len(r.open) - 1
		if r.open[top] > 0 {
			r.open[top]--
			if r.open[top] > 0 {
				return
			}
		}
		r.parts = append(r.parts, r.ends[top])
		r.open, r.ends = r.open[:top], r.ends[:top]
	}
}

func (r *recorder) start(open, end string, n int) {
	if n == 0 {
		r.emit(open + end)
		return
	}
	// The aggregate itself is one element of its parent, counted when it ends.
	r.parts = append(r.parts, open)
	r.open = append(r.open, n+1)
	r.ends = append(r.ends, end)
	r.open[len(r.open)-1]--
}

func (r *recorder) WriteSimple(s string)      { r.emit("+" + s) }
func (r *recorder) WriteError(s string)       { r.emit("-" + s) }
func (r *recorder) WriteBulk(b []byte)        { r.emit("$" + string(b)) }
func (r *recorder) WriteBulkString(s string)  { r.emit("$" + s) }
func (r *recorder) WriteInt(n int64)          { r.emit(":" + strconv.FormatInt(n, 10)) }
func (r *recorder) WriteNull()                { r.emit("nil") }
func (r *recorder) WriteArray(n int)          { r.start("[", "]", n) }
func (r *recorder) WriteMap(n int)            { r.start("{", "}", 2*n) }
func (r *recorder) WriteSet(n int)            { r.start("~[", "]", n) }
func (r *recorder) WriteDouble(f float64)     { r.emit(fmt.Sprintf(",%g", f)) }
func (r *recorder) WriteVerbatim(_, s string) { r.emit("=" + s) }
func (r *recorder) WriteDoubleText(s string)  { r.emit("," + s) }
func (r *recorder) WriteBool(b bool)          { r.emit(fmt.Sprintf("#%v", b)) }
func (r *recorder) WriteBigNumber(s string)   { r.emit("(" + s) }
func (r *recorder) WritePush(n int)           { r.WriteArray(n) }
func (r *recorder) WriteNullArray()           { r.WriteNull() }

func (r *recorder) String() string {
	s := strings.Join(r.parts, " ")
	for _, p := range []string{"[ ", "{ ", "~[ "} {
		s = strings.ReplaceAll(s, p, strings.TrimSpace(p))
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, " ]", "]"), " }", "}")
}
