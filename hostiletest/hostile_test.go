package hostiletest

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// exchange is what a server did with some input: the bytes it answered
// and whether it closed the connection afterwards.
type exchange struct {
	reply  string
	closed bool
}

// send writes input, then reads until the server closes the connection or
// stays quiet for quiet: an open connection is told apart from a closed
// one only by waiting, and quiet is generous so that a loaded machine does
// not turn a late reply into a difference.
func send(t *testing.T, addr string, input []byte, quiet time.Duration) exchange {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(input); err != nil && !isReset(err) {
		t.Fatalf("write: %v", err)
	}
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for range 10000 { // bounded: each round either reads or ends
		c.SetReadDeadline(time.Now().Add(quiet))
		n, err := c.Read(buf)
		got.Write(buf[:n])
		var ne net.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &ne) && ne.Timeout():
			return exchange{got.String(), false}
		case errors.Is(err, io.EOF) || isReset(err):
			return exchange{got.String(), true}
		default:
			t.Fatalf("read: %v", err)
		}
	}
	t.Fatal("reply never ended")
	return exchange{}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

var hostileInputs = []struct {
	name  string
	input []byte
}{
	{"empty line", []byte("\r\n")},
	{"multibulk zero", []byte("*0\r\n")},
	{"multibulk negative", []byte("*-10\r\n")},
	{"invalid multibulk length", []byte("*3000000000\r\n")},
	{"multibulk not a number", []byte("*abc\r\n")},
	{"expected dollar", []byte("*1\r\nfoo\r\n")},
	{"negative bulk length", []byte("*1\r\n$-10\r\n")},
	{"bulk length not a number", []byte("*1\r\n$blabla\r\n")},
	{"bulk length over 512MB", []byte("*1\r\n$600000000\r\n")},
	{"unbalanced quotes", []byte("SET \"k v\r\n")},
	{"inline too big", bytes.Repeat([]byte("a"), 70<<10)},
	{"mbulk count too big", append([]byte("*"), bytes.Repeat([]byte("1"), 70<<10)...)},
	{"bulk count too big", append([]byte("*1\r\n$"), bytes.Repeat([]byte("1"), 70<<10)...)},
	{"unknown command", []byte("FOO bar\r\n")},
	{"wrong arity", []byte("*3\r\n$4\r\nPING\r\n$1\r\na\r\n$1\r\nb\r\n")},
	{"ping inline", []byte("PING\r\n")},
	// Inline requests split as Redis splits them (sdssplitargs).
	{"inline hex escape", []byte("ECHO \"a\\x41\"\r\n")},
	{"inline hex escapes, both cases", []byte("ECHO \"\\x4a\\x4A\"\r\n")},
	{"inline single quotes keep backslashes", []byte("ECHO 'a\\nb'\r\n")},
	{"inline escaped single quote", []byte("ECHO 'it\\'s'\r\n")},
	{"inline tab separates", []byte("PING\tx\r\n")},
	{"inline vertical tab inside an argument", []byte("PING\vx\r\n")},
	{"inline form feed inside an argument", []byte("PING\fx\r\n")},
	{"inline leading vertical tab", []byte("\vPING\r\n")},
	{"inline CR separates", []byte("ECHO a\rb\r\n")},
	{"inline LF only", []byte("ECHO a\n")},
	{"inline blank line", []byte("  \t \r\n")},
	{"inline empty double quotes", []byte("ECHO \"\"\r\n")},
	{"inline empty single quotes", []byte("ECHO ''\r\n")},
	{"inline bad hex", []byte("ECHO \"\\xZZ\"\r\n")},
	{"inline short hex", []byte("ECHO \"\\x4\"\r\n")},
	{"inline escapes", []byte("ECHO \"\\b\\a\\q\\\\\\\"\\t\"\r\n")},
	{"inline unquoted backslash", []byte("ECHO a\\x41\r\n")},
	{"inline quote inside an argument", []byte("ECHO a\"b c\"\r\n")},
	{"inline quote followed by a letter", []byte("ECHO \"a\"b\r\n")},
	{"inline single quote followed by a letter", []byte("ECHO 'x'y\r\n")},
	{"inline quote followed by a vertical tab", []byte("ECHO \"x\"\vy\r\n")},
	{"inline quote followed by a tab", []byte("ECHO \"x\"\tPING\r\n")},
	{"inline unbalanced single quote", []byte("ECHO 'abc\r\n")},
	{"inline backslash before the end", []byte("ECHO \"ab\\\r\n")},
	{"inline unbalanced, then more", []byte("PING\r\nECHO \"a\r\nPING\r\n")},
	{"inline NUL", []byte("ECHO a\x00b\r\nPING\r\n")},
	// A command before malformed bytes in the same packet is answered
	// before the error.
	{"ping, then multibulk not a number", []byte("PING\r\n*abc\r\n")},
	{"ping, then bulk length not a number", []byte("PING\r\n*1\r\n$x\r\n")},
}

// TestHostileInputLikeRedis compares the proxy with redis-server 7 on each
// input: the same reply bytes and the same close decision.
func TestHostileInputLikeRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	px := redlocktest.StartMemory(t, redlocktest.Options{}).Addr
	const quiet = 300 * time.Millisecond
	for _, tt := range hostileInputs {
		t.Run(tt.name, func(t *testing.T) {
			want := send(t, redis, tt.input, quiet)
			got := send(t, px, tt.input, quiet)
			if got != want {
				t.Errorf("proxy: %q closed=%v\nredis: %q closed=%v", got.reply, got.closed, want.reply, want.closed)
			}
		})
	}
}

// TestInlineSplitLikeRedis sends generated inline lines, built from the
// bytes the split rules care about, to the proxy and to redis-server: the
// unknown-command error lists the arguments, so equal replies mean equal
// splits. A PING after each line shows the connection is still served.
func TestInlineSplitLikeRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	px := redlocktest.StartMemory(t, redlocktest.Options{}).Addr
	const alphabet = "ax4F \t\v\f\"'\\n\r"
	rng := rand.New(rand.NewPCG(7, 10))
	for range 400 {
		b := []byte("XX ")
		for range 1 + rng.IntN(12) {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		in := append(b, "\r\nPING\r\n"...)
		want, got := untilPong(t, redis, in), untilPong(t, px, in)
		if got != want {
			t.Errorf("%q:\nproxy: %q closed=%v\nredis: %q closed=%v", b, got.reply, got.closed, want.reply, want.closed)
		}
	}
}

// untilPong writes input and reads until the connection closes or the
// reply ends with the final PING's +PONG.
func untilPong(t *testing.T, addr string, input []byte) exchange {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(input); err != nil {
		t.Fatalf("write: %v", err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(got, []byte("+PONG\r\n")) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, io.EOF) || isReset(err) {
			return exchange{string(got), true}
		}
		if err != nil {
			t.Fatalf("read after %q: %v", got, err)
		}
	}
	return exchange{string(got), false}
}
