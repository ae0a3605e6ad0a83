package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// feedConn is the client side of a connection as the guard sees it: it
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
// through the request-stream guard into redcon's parser, as a connection
// does: no panic, no hang, no request over the cap reaches a command, the
// guard forwards no byte it did not receive, and a protocol error is
// answered once with Redis's text. Inline requests reach the parser as
// multibulks, so the check on invented bytes counts arguments, not
// framing.
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
		g := newGuardConn(fc, fuzzMaxRequest)
		done := make(chan error, 1)
		var forwarded int
		go func() {
			rd := redcon.NewReader(g)
			for {
				cmds, err := rd.ReadCommands()
				for _, c := range cmds {
					size := argBytes(c)
					if size > fuzzMaxRequest {
						done <- errors.New("a request over the cap reached the parser")
						return
					}
					forwarded += size
				}
				if err != nil {
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
			t.Fatalf("the parser did not finish on %d bytes", len(in))
		}
		if forwarded > fc.read {
			t.Fatalf("guard forwarded %d argument bytes of %d received", forwarded, fc.read)
		}
		if len(g.line) > maxInlineLen+1 {
			t.Fatalf("guard holds a %d-byte count line", len(g.line))
		}
		out := fc.out.String()
		if out != "" && (strings.Count(out, "\r\n") != 1 || !strings.HasPrefix(out, "-ERR Protocol error: ") || !strings.HasSuffix(out, "\r\n")) {
			t.Fatalf("guard wrote %q", out)
		}
	})
}

func argBytes(c redcon.Command) int {
	n := 0
	for _, a := range c.Args {
		n += len(a)
	}
	return n
}

// TestGuardHandsOverWholeRequests: redcon sees only complete requests
// (but for big bulks), so it parses each once, however the bytes arrive
// (it would reparse an incomplete one on every read: quadratic in its
// arguments).
func TestGuardHandsOverWholeRequests(t *testing.T) {
	// The inline PING reaches redcon as a multibulk.
	first := "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\r\n$4\r\nPING\r\n"
	fc := &feedConn{in: []byte("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nab"), chunk: 3}
	g := newGuardConn(fc, fuzzMaxRequest)
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := g.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
		if s := string(got); !strings.HasPrefix(first, s) || (s != first[:len("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n")] && s != first) {
			t.Fatalf("guard handed over %q, not a whole number of requests", s)
		}
	}
	if string(got) != first {
		t.Fatalf("guard handed over %q, want %q", got, first)
	}
}

// TestGuardForwardsBigBulkEarly: a big value goes through as it arrives,
// so it is not held twice, by the guard and by redcon.
func TestGuardForwardsBigBulkEarly(t *testing.T) {
	head := fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", bigBulk)
	fc := &feedConn{in: []byte(head + "xyz"), chunk: 1 << 20}
	g := newGuardConn(fc, DefaultMaxRequestBytes)
	buf := make([]byte, 1024)
	n, err := g.Read(buf)
	if err != nil || string(buf[:n]) != head+"xyz" {
		t.Fatalf("Read = %q, %v; want the incomplete request so far", buf[:n], err)
	}
}
