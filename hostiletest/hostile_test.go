package hostiletest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/leaktest"
	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/internal/redlocktest"
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
