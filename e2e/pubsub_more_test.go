package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// With a backend down, SUBSCRIBE and PUBLISH work with the others; when it
// is back, the proxy's subscriptions are restored on it.
func TestPubSubBackendDownAndBack(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	down := in.Backends[2]
	down.Kill()
	const ch = "down-channel"
	ps := subscribe(t, in.Addr, 2, false, ch)
	pps := subscribe(t, in.Addr, 2, true, "down-*")
	if n := publish(t, in.Client(t, 2), ch, "while-down"); n != 2 {
		t.Errorf("PUBLISH with a backend down = %d, want 2 (the proxy's channel and pattern subscriptions)", n)
	}
	up := in.Backends[:2]
	if got := untilMarks(t, marks(t, up, ch), nextMessage(t, ps)); !slices.Equal(got, []string{"while-down"}) {
		t.Errorf("received %q, want while-down once", got)
	}
	if got := untilMarks(t, marks(t, up, ch), nextMessage(t, pps)); !slices.Equal(got, []string{"while-down"}) {
		t.Errorf("pattern subscriber received %q, want while-down once", got)
	}

	down.Restart(t)
	waitFor(t, "the channel subscribed again on the restarted backend", func() bool {
		return pubsubNumSub(t, down.Client(), ch) == 1
	})
	waitFor(t, "the pattern subscribed again on the restarted backend", func() bool {
		n, err := down.Client().PubSubNumPat(ctxT(t)).Result()
		return err == nil && n == 1
	})
	publish(t, down.Client(), ch, "from-the-restarted-one")
	if got := untilMarks(t, marks(t, in.Backends, ch), nextMessage(t, ps)); !slices.Equal(got, []string{"from-the-restarted-one"}) {
		t.Errorf("received %q, want the restarted backend's message once", got)
	}
}

// On a RESP3 connection, messages are pushes between whole replies, in
// the order they were published, and the connection keeps running every
// command.
func TestPubSubRESP3Interleaved(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch, msgs, pings = "interleaved", 40, 300
	c := resptest.Dial(t, in.Addr)
	c.Send("HELLO", "3")
	readFrame(t, c.R)
	c.Send("SUBSCRIBE", ch)
	if got, want := readFrame(t, c.R), ">3\r\n$9\r\nsubscribe\r\n$11\r\ninterleaved\r\n:1\r\n"; got != want {
		t.Fatalf("SUBSCRIBE: %q, want %q", got, want)
	}
	pub := in.Client(t, 2)
	done := make(chan error, 1)
	go func() {
		for i := range msgs {
			if err := pub.Publish(ctxT(t), ch, fmt.Sprint("m-", i)).Err(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range pings {
		c.Send("PING")
	}
	var got []string
	pongs := 0
	for pongs < pings || len(got) < msgs {
		f := readFrame(t, c.R)
		switch {
		case f == "+PONG\r\n":
			pongs++
		case strings.HasPrefix(f, ">3\r\n$7\r\nmessage\r\n"):
			got = append(got, f)
		default:
			t.Fatalf("unexpected frame %q", f)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, f := range got {
		if want := msgFrame(">", ch, fmt.Sprint("m-", i)); f != want {
			t.Fatalf("message %d: %q, want %q", i, f, want)
		}
	}
}

// A RESP3 subscriber that waits for a lock (LOCK … WAIT) gets its
// messages while it waits, then the lock when it is released; RESET
// drops its subscriptions and its KEEPALIVE lock.
func TestPubSubRESP3WaitAndReset(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "redisson_lock__channel:{w}"
	holder := in.Client(t, 2)
	tok, _ := lock(t, holder, "w", 10000)
	c := resptest.Dial(t, in.Addr)
	c.Send("HELLO", "3")
	readFrame(t, c.R)
	c.Send("SUBSCRIBE", ch)
	readFrame(t, c.R)
	c.Send("LOCK", "w", "10000", "WAIT", "10000")
	publish(t, in.Client(t, 2), ch, "during-wait")
	if got, want := readFrame(t, c.R), msgFrame(">", ch, "during-wait"); got != want {
		t.Fatalf("while LOCK waits: %q, want the message %q", got, want)
	}
	if n, err := holder.Do(ctxT(t), "UNLOCK", "w", tok).Int64(); err != nil || n != 1 {
		t.Fatalf("UNLOCK: %d %v", n, err)
	}
	if got := readFrame(t, c.R); !strings.HasPrefix(got, "*2\r\n") {
		t.Fatalf("LOCK after the release: %q, want [token validity]", got)
	}
	c.Send("LOCK", "kept", "5000", "KEEPALIVE")
	if got := readFrame(t, c.R); !strings.HasPrefix(got, "*2\r\n") {
		t.Fatalf("LOCK KEEPALIVE while subscribed: %q", got)
	}
	if n := pubsubNumSub(t, holder, ch); n != 1 {
		t.Fatalf("NUMSUB = %d, want 1", n)
	}
	if got := c.Line("RESET"); got != "+RESET" {
		t.Fatalf("RESET: %q", got)
	}
	if n := pubsubNumSub(t, holder, ch); n != 0 {
		t.Errorf("NUMSUB after RESET = %d, want 0", n)
	}
	lock(t, holder, "kept", 1000) // RESET released the kept lock
	if got := c.Line("GET", "kept"); got == "" {
		t.Errorf("GET after RESET: empty reply")
	}
}

// A pipelined SUBSCRIBE puts the rest of its batch in subscribed mode, as
// in redis-server.
func TestPubSubPipelinedLikeRedis(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	ref := redistest.Start(t)
	const batch = "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\nPING\r\nGET x\r\nPING hi\r\n*1\r\n$11\r\nUNSUBSCRIBE\r\nPING\r\n"
	run := func(addr string) []string {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(nc, batch); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(nc)
		var out []string
		for range 6 {
			out = append(out, readFrame(t, r))
		}
		return out
	}
	got, want := run(in.Addr), run(ref.Addr())
	if !slices.Equal(got, want) {
		t.Errorf("pipelined:\n got %q\nwant %q", got, want)
	}
}

// A subscriber that never reads is cut off once its undelivered messages
// pass the pub/sub output limit; the other subscribers keep getting every
// message, in order.
func TestPubSubSlowSubscriberCutOff(t *testing.T) {
	const limit = 256 << 10
	in := redlocktest.Start(t, redlocktest.Options{Proxy: proxy.Options{MaxPubSubBytes: limit}})
	const ch = "slow-channel"
	slow, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "SUBSCRIBE "+ch+"\r\n")
	slowR := bufio.NewReader(slow)
	slow.SetReadDeadline(time.Now().Add(20 * time.Second))
	readFrame(t, slowR)

	fast := subscribe(t, in.Addr, 2, false, ch)
	received := make(chan []string, 1)
	go func() {
		var got []string
		for m := range fast.Channel() {
			if strings.HasPrefix(m.Payload, "end") {
				break
			}
			got = append(got, m.Payload[:strings.IndexByte(m.Payload, '|')])
		}
		received <- got
	}()
	pub := in.Client(t, 2)
	big := strings.Repeat("x", 64<<10)
	var sent []string
	for i := 0; pubsubNumSub(t, pub, ch) == 2; i++ {
		if i == 2000 {
			t.Fatal("the slow subscriber was not cut off after 2000 messages of 64 KiB")
		}
		sent = append(sent, fmt.Sprint("big-", i))
		publish(t, pub, ch, fmt.Sprint("big-", i, "|", big))
	}
	publish(t, pub, ch, "end")
	if got := <-received; !slices.Equal(got, sent) {
		t.Errorf("the fast subscriber got %d messages, want the %d sent, in order", len(got), len(sent))
	}
	slow.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.Copy(io.Discard, slow)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Errorf("the slow subscriber's connection: %v, want it closed by the proxy", err)
	}
}

func isReset(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se)
}

// Pub/sub spans the databases, as in Redis: a subscriber that selected a
// db gets a message published from another one, once.
func TestPubSubAcrossDatabases(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "any-db"
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, DB: 5, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	ps := c.Subscribe(ctxT(t), ch)
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	publish(t, in.Client(t, 2), ch, "from db 0")
	if got := untilMarks(t, marks(t, in.Backends, ch), nextMessage(t, ps)); !slices.Equal(got, []string{"from db 0"}) {
		t.Errorf("received %q, want the message once", got)
	}
}
