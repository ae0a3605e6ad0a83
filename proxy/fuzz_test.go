package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// feedConn is the client side of a connection as the reader sees it: it
// hands over its input in pieces of at most chunk bytes, then EOF, and
// keeps what the server writes back.
type feedConn struct {
	net.Conn // nil: only Read and Write are used
	in       []byte
	chunk    int
	read     int
	out      bytes.Buffer
}

func (c *feedConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.chunk, len(c.in))
	copy(p, c.in[:n])
	c.in = c.in[n:]
	c.read += n
	return n, nil
}

func (c *feedConn) Write(p []byte) (int, error) { return c.out.Write(p) }

const fuzzMaxRequest = 4096

// FuzzRequestStream sends arbitrary bytes, in pieces of arbitrary size,
// through the request reader, as a connection does: no panic, no hang, no
// request over the cap reaches a command, the reader hands over no byte it
// did not receive, and a protocol error is answered once with Redis's
// text. Inline requests reach the commands split, so the check on invented
// bytes counts arguments, not framing.
//
//	go test -run='^$' -fuzz=FuzzRequestStream -fuzztime=60s ./proxy/
func FuzzRequestStream(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n", "*1\r\n$4\r\nPING\r\n", "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n",
		"*3000000000\r\n", "*abc\r\n", "*1\r\nfoo\r\n", "*1\r\n$-10\r\n", "*1\r\n$1000000000\r\nabc",
		"SET \"k\" 'v' \"unbalanced\r\n", "\r\n*-10\r\n*0\r\nPING\r\n", "\x00" + strings.Repeat("a", 5000),
		"*" + strings.Repeat("1", 70000), "*1\r\n$" + strings.Repeat("9", 70000),
		"*2\r\n$4\r\nECHO\r\n$5000\r\n" + strings.Repeat("x", 5000) + "\r\n",
		"PING\nPING\r\n*1\r\n$4\r\nPING\r\n", "*1\r\n$4\r\nPINGxx", "*2\n$4\nECHO\n$1\na\n",
		"ECHO \"a\\x41\" 'a\\nb' 'it\\'s'\r\n", "PING\tx\vy\f\r\n", "ECHO \"a\"b\r\n", "ECHO \"\\x4\\\r\n", "ECHO a\x00b\r\nPING\r\n",
	} {
		f.Add([]byte(seed), uint16(1))
		f.Add([]byte(seed), uint16(7))
		f.Add([]byte(seed), uint16(16<<10))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint16) {
		fc := &feedConn{in: bytes.Clone(in), chunk: max(int(chunk), 1)}
		rd := newReader(fc, fuzzMaxRequest, 0)
		done := make(chan error, 1)
		var forwarded, longestLine int
		go func() {
			for {
				cmds, err := rd.next()
				for _, c := range cmds {
					size := argBytes(c)
					if size > fuzzMaxRequest {
						done <- errors.New("a request over the cap reached the commands")
						return
					}
					forwarded += size
				}
				longestLine = max(longestLine, rd.lineLen())
				if err != nil {
					fc.Write(protocolReply(err))
					done <- nil
					return
				}
			}
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the reader did not finish on %d bytes", len(in))
		}
		if forwarded > fc.read {
			t.Fatalf("reader forwarded %d argument bytes of %d received", forwarded, fc.read)
		}
		if longestLine > maxInlineLen+1 {
			t.Fatalf("reader holds a %d-byte count line", longestLine)
		}
		out := fc.out.String()
		if out != "" && (strings.Count(out, "\r\n") != 1 || !strings.HasPrefix(out, "-ERR Protocol error: ") || !strings.HasSuffix(out, "\r\n")) {
			t.Fatalf("reader wrote %q", out)
		}
	})
}

func argBytes(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

// TestGuardHandsOverWholeRequests: the reader hands over only complete
// requests, however the bytes arrive, and parses each once: it resumes
// where the last read stopped (parsing an incomplete request again from
// its start on every read is quadratic in its arguments).
func TestGuardHandsOverWholeRequests(t *testing.T) {
	fc := &feedConn{in: []byte("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nab"), chunk: 3}
	rd := newReader(fc, fuzzMaxRequest, 0)
	var got []string
	for range 100 {
		cmds, err := rd.next()
		for _, c := range cmds {
			got = append(got, string(bytes.Join(c, []byte(" "))))
		}
		if err != nil {
			break
		}
	}
	if want := []string{"ECHO abc", "PING"}; !slices.Equal(got, want) {
		t.Fatalf("reader handed over %q, want %q", got, want)
	}
	if rd.scanned != fc.read {
		t.Fatalf("reader checked %d bytes of %d received: it parsed some again", rd.scanned, fc.read)
	}
}

// TestGuardForwardsBigBulkEarly: a big value is held once, in the reader's
// buffer, as it arrives.
func TestGuardForwardsBigBulkEarly(t *testing.T) {
	head := fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", 64<<10)
	fc := &feedConn{in: []byte(head + "xyz"), chunk: 1 << 20}
	rd := newReader(fc, DefaultMaxRequestBytes, 0)
	cmds, err := rd.next()
	if len(cmds) != 0 || err != io.EOF || string(rd.buf[:rd.end]) != head+"xyz" {
		t.Fatalf("next = %q, %v, holding %q; want the incomplete request so far, once", cmds, err, rd.buf[:rd.end])
	}
}
