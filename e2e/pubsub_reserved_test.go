package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// Channels in redlockd's namespace are the proxy's: naming one is refused,
// and a pattern that matches them (allowed) never delivers their messages,
// such as the release notices of LOCK … WAIT.
func TestPubSubReservedChannels(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := resptest.Dial(t, in.Addr)
	const refused = "-ERR channel is in redlockd's reserved namespace"
	for _, args := range [][]string{
		{"SUBSCRIBE", "redlockd:released"}, {"SUBSCRIBE", "ok", "redlockd:x"},
		{"PSUBSCRIBE", "redlockd:*"}, {"PUBLISH", "redlockd:released", "k"},
		{"UNSUBSCRIBE", "redlockd:released"},
	} {
		if got := c.Line(args...); got != refused {
			t.Errorf("%v = %q, want %q", args, got, refused)
		}
	}
	if got := c.Line("PING"); got != "+PONG" {
		t.Errorf("after the refusals PING = %q: the connection subscribed to something", got)
	}

	all := subscribe(t, in.Addr, 2, true, "*")
	holder, waiter := in.Client(t, 2), in.Client(t, 2)
	tok, _ := lock(t, holder, "announced", 10000)
	got := make(chan error, 1)
	go func() { got <- waiter.Do(ctxT(t), "LOCK", "announced", 10000, "WAIT", 10000).Err() }()
	// The waiter marks the key before it waits; poll until its mark is on
	// a backend, so that the release below is announced.
	waitFor(t, "the waiter's mark", func() bool {
		n, _ := in.Backends[0].Client().Exists(ctxT(t), "redlockd:wait:{announced}").Result()
		return n == 1
	})
	if err := holder.Do(ctxT(t), "UNLOCK", "announced", tok).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter's LOCK: %v", err)
	}
	seen := untilMarks(t, marks(t, in.Backends, "plain"), func() string {
		m, err := all.ReceiveMessage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(m.Channel, "redlockd:") {
			t.Errorf("a pattern subscriber got %q on the reserved channel %q", m.Payload, m.Channel)
		}
		return m.Payload
	})
	if len(seen) != 0 {
		t.Errorf("received %q besides the markers", seen)
	}
}

// A RESP3 subscriber holding a session lock that hangs up gives back both:
// its subscription, on the proxy and the backends, and its lock.
func TestPubSubHangUpWithSessionLock(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "session-channel"
	nc, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(nc, "HELLO 3\r\nSUBSCRIBE "+ch+"\r\nSET sess tok NX\r\n")
	r := bufio.NewReader(nc)
	readFrame(t, r)
	readFrame(t, r)
	if got := readFrame(t, r); got != "+OK\r\n" {
		t.Fatalf("SET NX (a session lock) while subscribed: %q", got)
	}
	other := in.Client(t, 2)
	if n := pubsubNumSub(t, other, ch); n != 1 {
		t.Fatalf("NUMSUB = %d, want 1", n)
	}
	nc.Close()
	waitFor(t, "the hang-up to unsubscribe", func() bool { return pubsubNumSub(t, other, ch) == 0 })
	for i, s := range in.Backends {
		waitFor(t, fmt.Sprintf("backend %d to unsubscribe", i), func() bool { return pubsubNumSub(t, s.Client(), ch) == 0 })
	}
	waitFor(t, "the session lock released", func() bool {
		ok, err := other.SetNX(ctxT(t), "sess", "mine", time.Second).Result()
		return err == nil && ok
	})
}
