package proxy

import (
	"math"
	"testing"
)

func TestWriterEncoding(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer)
		resp2 string
		resp3 string
	}{
		{"simple", func(w *Writer) { w.WriteSimple("OK") }, "+OK\r\n", "+OK\r\n"},
		{"simple newlines", func(w *Writer) { w.WriteSimple("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
		{"error", func(w *Writer) { w.WriteError("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
		{"error newline", func(w *Writer) { w.WriteError("ERR x\ny") }, "-ERR x y\r\n", "-ERR x y\r\n"},
		{"bulk", func(w *Writer) { w.WriteBulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"empty bulk", func(w *Writer) { w.WriteBulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk string", func(w *Writer) { w.WriteBulkString("tok") }, "$3\r\ntok\r\n", "$3\r\ntok\r\n"},
		{"int", func(w *Writer) { w.WriteInt(-2) }, ":-2\r\n", ":-2\r\n"},
		{"int max", func(w *Writer) { w.WriteInt(math.MaxInt64) }, ":9223372036854775807\r\n", ":9223372036854775807\r\n"},
		{"null", func(w *Writer) { w.WriteNull() }, "$-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.WriteArray(2); w.WriteBulkString("t"); w.WriteInt(9) },
			"*2\r\n$1\r\nt\r\n:9\r\n", "*2\r\n$1\r\nt\r\n:9\r\n"},
		{"empty array", func(w *Writer) { w.WriteArray(0) }, "*0\r\n", "*0\r\n"},
		{"map", func(w *Writer) { w.WriteMap(1); w.WriteBulkString("proto"); w.WriteInt(3) },
			"*2\r\n$5\r\nproto\r\n:3\r\n", "%1\r\n$5\r\nproto\r\n:3\r\n"},
		{"set", func(w *Writer) { w.WriteSet(1); w.WriteBulkString("a") }, "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n"},
		// Expected double texts are what redis-server 7.0.15 sends for ZSCORE.
		{"double", func(w *Writer) { w.WriteDouble(1.1) }, "$18\r\n1.1000000000000001\r\n", ",1.1000000000000001\r\n"},
		{"double integral", func(w *Writer) { w.WriteDouble(3) }, "$1\r\n3\r\n", ",3\r\n"},
		{"double big", func(w *Writer) { w.WriteDouble(1e21) }, "$5\r\n1e+21\r\n", ",1e+21\r\n"},
		{"double small", func(w *Writer) { w.WriteDouble(1e-5) },
			"$22\r\n1.0000000000000001e-05\r\n", ",1.0000000000000001e-05\r\n"},
		{"double inf", func(w *Writer) { w.WriteDouble(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"double -inf", func(w *Writer) { w.WriteDouble(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double nan", func(w *Writer) { w.WriteDouble(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{"verbatim", func(w *Writer) { w.WriteVerbatim("txt", "a\nb") }, "$3\r\na\nb\r\n", "=7\r\ntxt:a\nb\r\n"},
		{"verbatim bad format", func(w *Writer) { w.WriteVerbatim("markdown", "x") }, "$1\r\nx\r\n", "=5\r\ntxt:x\r\n"},
		{"verbatim mkd", func(w *Writer) { w.WriteVerbatim("mkd", "") }, "$0\r\n\r\n", "=4\r\nmkd:\r\n"},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			proto int
			want  string
		}{{2, tt.resp2}, {3, tt.resp3}} {
			w := NewWriter(func() int { return c.proto })
			tt.write(w)
			if got := string(w.Bytes()); got != c.want {
				t.Errorf("%s RESP%d: got %q, want %q", tt.name, c.proto, got, c.want)
			}
		}
	}
}

// A command that switches protocol mid-reply (HELLO 3) gets the new
// encoding for everything written after the switch.
func TestWriterFollowsProtoPerWrite(t *testing.T) {
	proto := 2
	w := NewWriter(func() int { return proto })
	w.WriteNull()
	proto = 3
	w.WriteNull()
	if got, want := string(w.Bytes()), "$-1\r\n_\r\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	w.Reset()
	if len(w.Bytes()) != 0 {
		t.Fatalf("Reset left %q", w.Bytes())
	}
}

func TestWriterNilProtoIsRESP2(t *testing.T) {
	w := NewWriter(nil)
	w.WriteMap(1)
	if got := string(w.Bytes()); got != "*2\r\n" {
		t.Fatalf("got %q", got)
	}
}
