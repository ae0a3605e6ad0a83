package e2e

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// subscribe subscribes a go-redis client of addr to channels and waits
// for the confirmations.
func subscribe(t *testing.T, addr string, protocol int, pattern bool, names ...string) *redis.PubSub {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	var ps *redis.PubSub
	if pattern {
		ps = c.PSubscribe(ctxT(t), names...)
	} else {
		ps = c.Subscribe(ctxT(t), names...)
	}
	t.Cleanup(func() { ps.Close() })
	for range names {
		if _, err := ps.Receive(ctxT(t)); err != nil {
			t.Fatalf("subscribe %v: %v", names, err)
		}
	}
	return ps
}

func nextMessage(t *testing.T, ps *redis.PubSub) func() string {
	return func() string {
		t.Helper()
		m, err := ps.ReceiveMessage(ctxT(t))
		if err != nil {
			t.Fatalf("receiving: %v", err)
		}
		return m.Payload
	}
}

func publish(t *testing.T, c *redis.Client, channel, payload string) int64 {
	t.Helper()
	n, err := c.Publish(ctxT(t), channel, payload).Result()
	if err != nil {
		t.Fatalf("PUBLISH %s %s: %v", channel, payload, err)
	}
	return n
}

// A message published through redlockd goes to every backend, and each
// delivers its copy: a subscriber (go-redis, RESP2 and RESP3) gets it once.
func TestPubSubPublishedOnce(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ch := fmt.Sprintf("redisson_lock__channel:{k%d}", proto)
			ps := subscribe(t, in.Addr, proto, false, ch)
			c := in.Client(t, proto)
			if n := publish(t, c, ch, "unlocked"); n != 1 {
				t.Errorf("PUBLISH = %d, want 1 (this proxy's subscription on a backend)", n)
			}
			got := untilMarks(t, marks(t, in.Backends, ch), nextMessage(t, ps))
			if !slices.Equal(got, []string{"unlocked"}) {
				t.Errorf("received %q, want the message once", got)
			}
		})
	}
}

// A message published on every backend directly, as a replicated script
// publishes it, is delivered once; the same payload published twice is
// delivered twice, through redlockd and directly.
func TestPubSubCopiesAndRepeats(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "redisson_lock__channel:{r}"
	ps := subscribe(t, in.Addr, 2, false, ch)
	for _, s := range in.Backends {
		publish(t, s.Client(), ch, "script")
	}
	c := in.Client(t, 2)
	publish(t, c, ch, "twice")
	publish(t, c, ch, "twice")
	for range 2 {
		for _, s := range in.Backends {
			publish(t, s.Client(), ch, "direct-twice")
		}
	}
	publish(t, in.Backends[1].Client(), ch, "one backend only")
	got := untilMarks(t, marks(t, in.Backends, ch), nextMessage(t, ps))
	slices.Sort(got)
	want := []string{"direct-twice", "direct-twice", "one backend only", "script", "twice", "twice"}
	if !slices.Equal(got, want) {
		t.Errorf("received %q, want %q", got, want)
	}
}

// A pattern subscription gets each message once, as a pmessage.
func TestPubSubPattern(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	ps := subscribe(t, in.Addr, 2, true, "lock:*")
	publish(t, in.Client(t, 2), "lock:a", "p1")
	ms := marks(t, in.Backends, "lock:marks")
	got := untilMarks(t, ms, func() string {
		m, err := ps.ReceiveMessage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.Pattern != "lock:*" {
			t.Errorf("message %+v: pattern %q, want lock:*", m, m.Pattern)
		}
		return m.Payload
	})
	if !slices.Equal(got, []string{"p1"}) {
		t.Errorf("received %q, want p1 once", got)
	}
}

// A subscriber on proxy A gets a message published through proxy B once.
func TestPubSubTwoProxies(t *testing.T) {
	servers := redistest.StartN(t, 3)
	a := redlocktest.StartOver(t, servers, redlocktest.Options{})
	b := redlocktest.StartOver(t, servers, redlocktest.Options{})
	const ch = "redisson_lock__channel:{two}"
	ps := subscribe(t, a.Addr, 2, false, ch)
	if n := publish(t, b.Client(t, 2), ch, "from-b"); n != 1 {
		t.Errorf("PUBLISH through B = %d, want 1 (proxy A's subscription)", n)
	}
	got := untilMarks(t, marks(t, servers, ch), nextMessage(t, ps))
	if !slices.Equal(got, []string{"from-b"}) {
		t.Errorf("received %q, want from-b once", got)
	}
}

// redis-cli subscribed through redlockd prints each message once.
func TestPubSubRedisCLI(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "cli-channel"
	ctx, cancel := context.WithCancel(context.Background())
	cmd := childproc.CommandContext(ctx, "redis-cli", "-p", fmt.Sprint(in.Port), "SUBSCRIBE", ch)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("redis-cli output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	for _, want := range []string{"subscribe", ch, "1"} {
		if got := next(); got != want {
			t.Fatalf("redis-cli printed %q, want %q", got, want)
		}
	}
	publish(t, in.Client(t, 2), ch, "hello")
	got := untilMarks(t, marks(t, in.Backends, ch), func() string {
		for _, want := range []string{"message", ch} {
			if got := next(); got != want {
				t.Fatalf("redis-cli printed %q, want %q", got, want)
			}
		}
		return next()
	})
	if !slices.Equal(got, []string{"hello"}) {
		t.Errorf("redis-cli received %q, want hello once", got)
	}
}

// The replies of the pub/sub commands, the subscribed mode's refusals and
// the message frames are byte for byte those of redis-server.
func TestPubSubBytesLikeRedis(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	ref := redistest.Start(t)
	script := [][]string{
		{"SUBSCRIBE", "a", "b"}, {"SUBSCRIBE", "a"}, {"GET", "x"}, {"FOO"}, {"GET"},
		{"PING"}, {"PING", "hi"}, {"PSUBSCRIBE", "p*"}, {"PUBSUB", "NUMSUB", "a"},
		{"LOCK", "k", "1000"}, {"UNSUBSCRIBE", "zz"}, {"UNSUBSCRIBE"}, {"PUNSUBSCRIBE"},
		{"PUNSUBSCRIBE"}, {"UNSUBSCRIBE", "none"}, {"PING"}, {"SUBSCRIBE"}, {"PUBLISH", "a"},
		{"PUBSUB"}, {"PUBSUB", "FOO"}, {"PUBSUB", "NUMPAT", "x"}, {"PUBSUB", "CHANNELS", "a", "b"},
		{"PUBSUB", "NUMSUB"}, {"PUBSUB", "CHANNELS", "zz*"},
	}
	got, want := resptest.Dial(t, in.Addr), resptest.Dial(t, ref.Addr())
	for _, args := range script {
		got.Send(args...)
		want.Send(args...)
		g, w := readFrames(t, got.R, args), readFrames(t, want.R, args)
		if args[0] == "LOCK" {
			w = g // redis-server has no LOCK; only the refusal is compared
			if !strings.HasPrefix(g[0], "-ERR Can't execute 'lock'") {
				t.Errorf("LOCK while subscribed: %q", g)
			}
		}
		if len(args) == 1 && args[0] == "UNSUBSCRIBE" {
			// Redis answers in its dict's order, which its hash seed
			// changes from one process to the next: the counts go down
			// in the same steps, the names may come in any order.
			g, w = unordered(g), unordered(w)
		}
		if !slices.Equal(g, w) {
			t.Errorf("%v:\n got %q\nwant %q", args, g, w)
		}
	}
	t.Run("messages", func(t *testing.T) { compareMessages(t, in, ref, 2) })
	t.Run("RESP3", func(t *testing.T) { compareMessages(t, in, ref, 3) })
}

// readFrames reads the frames a command answers with: one per channel or
// pattern for the pub/sub commands, as many as there were subscriptions
// for an UNSUBSCRIBE without arguments (frames says how many).
func readFrames(t *testing.T, r *bufio.Reader, args []string) []string {
	t.Helper()
	n := 1
	if f, ok := frames[strings.Join(args, " ")]; ok {
		n = f
	}
	out := make([]string, n)
	for i := range out {
		out[i] = readFrame(t, r)
	}
	return out
}

// unordered splits confirmations into their counts, in order, and their
// other bytes, sorted.
func unordered(fs []string) []string {
	var heads, counts []string
	for _, f := range fs {
		i := strings.LastIndex(f, ":")
		heads, counts = append(heads, f[:i]), append(counts, f[i:])
	}
	slices.Sort(heads)
	return append(heads, counts...)
}

// frames are the replies of TestPubSubBytesLikeRedis's commands that are
// more than one frame.
var frames = map[string]int{"SUBSCRIBE a b": 2, "UNSUBSCRIBE": 2}

// compareMessages subscribes a raw connection of each server to a
// channel and a pattern, publishes once (through redlockd on redlockd:
// every backend delivers a copy), and compares what arrives, and the
// replies interleaved with it, byte for byte.
func compareMessages(t *testing.T, in *redlocktest.Instance, ref *redistest.Server, proto int) {
	run := func(addr string, pub func(string)) []string {
		c := resptest.Dial(t, addr)
		if proto == 3 {
			c.Send("HELLO", "3")
			readFrame(t, c.R)
		}
		var out []string
		for _, args := range [][]string{{"SUBSCRIBE", "m"}, {"PSUBSCRIBE", "m*"}} {
			c.Send(args...)
			out = append(out, readFrame(t, c.R))
		}
		pub("payload")
		msgs := []string{readFrame(t, c.R), readFrame(t, c.R)}
		slices.Sort(msgs) // message and pmessage come from different backends' copies
		out = append(out, msgs...)
		c.Send("PING")
		out = append(out, readFrame(t, c.R))
		if proto == 3 {
			c.Send("GET", "nothing")
			out = append(out, readFrame(t, c.R))
		}
		c.Send("UNSUBSCRIBE")
		out = append(out, readFrame(t, c.R))
		c.Send("PUNSUBSCRIBE")
		out = append(out, readFrame(t, c.R))
		return out
	}
	got := run(in.Addr, func(p string) { publish(t, in.Client(t, 2), "m", p) })
	want := run(ref.Addr(), func(p string) { publish(t, ref.Client(), "m", p) })
	if !slices.Equal(got, want) {
		t.Errorf("RESP%d:\n got %q\nwant %q", proto, got, want)
	}
	if !slices.Contains(got, msgFrame(map[int]string{2: "*", 3: ">"}[proto], "m", "payload")) {
		t.Errorf("RESP%d: no message frame in %q", proto, got)
	}
}

// pubsubNumSub is PUBSUB NUMSUB channel on c.
func pubsubNumSub(t *testing.T, c *redis.Client, ch string) int64 {
	t.Helper()
	m, err := c.PubSubNumSub(ctxT(t), ch).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB: %v", err)
	}
	return m[ch]
}

// waitFor polls cond every 10ms for at most 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A client that hangs up is unsubscribed, on the proxy and, being the
// last subscriber, on every backend.
func TestPubSubHangUpUnsubscribes(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	const ch = "hangup-channel"
	c := in.Client(t, 2)
	ps := subscribe(t, in.Addr, 2, false, ch)
	if n := pubsubNumSub(t, c, ch); n != 1 {
		t.Fatalf("PUBSUB NUMSUB = %d, want 1", n)
	}
	for i, s := range in.Backends {
		if n := pubsubNumSub(t, s.Client(), ch); n != 1 {
			t.Errorf("backend %d: NUMSUB = %d, want 1 (the proxy's subscription)", i, n)
		}
	}
	ps.Close()
	waitFor(t, "the proxy to unsubscribe", func() bool { return pubsubNumSub(t, c, ch) == 0 })
	for i, s := range in.Backends {
		waitFor(t, fmt.Sprintf("backend %d to unsubscribe", i), func() bool { return pubsubNumSub(t, s.Client(), ch) == 0 })
	}
}
