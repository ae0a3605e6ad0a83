package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// startWaiters opens n connections that each send LOCK key ttl WAIT
// <an hour> TOKEN gone-<i> for every key of keys, pipelined in one
// write, and returns once all of them are waiting.
func startWaiters(t *testing.T, in *redlocktest.Instance, n int, keys ...string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", in.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var b strings.Builder
		for _, key := range keys {
			fmt.Fprintf(&b, "LOCK %s 60000 WAIT 3600000 TOKEN gone-%d\r\n", key, i)
		}
		io.WriteString(c, b.String())
		conns[i] = c
	}
	for _, key := range keys {
		pollFor(t, fmt.Sprintf("%d waiters on %s", n, key), func() bool { return in.Cluster.Waiters(key) == n })
	}
	return conns
}

func hangUp(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// TestHungUpWaitersFreeTheirSlots: with --max-clients 3, one client holds a
// lock and two wait for it; once the two hang up, a new client is served
// (before, their slots stayed taken for as long as their waits lasted),
// and the holder's UNLOCK leaves the lock free: the waiters that left do
// not take it.
func TestHungUpWaitersFreeTheirSlots(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Proxy: proxy.Options{MaxClients: 3}})
	holder := resptest.Dial(t, in.Addr)
	holder.Send("LOCK", "k", "60000", "TOKEN", "held")
	if l := rawReply(t, holder.R); !strings.HasPrefix(l, "*2\r\n$4\r\nheld\r\n") {
		t.Fatalf("holder's LOCK = %q", l)
	}
	waiters := startWaiters(t, in, 2, "k")
	if l := refusedOrPong(t, in.Addr); l != "-ERR max number of clients reached" {
		t.Fatalf("a fourth client while three are connected got %q", l)
	}
	hangUp(waiters)
	pollFor(t, "a new client to be served after the waiters hung up", func() bool {
		return refusedOrPong(t, in.Addr) == "+PONG"
	})
	pollFor(t, "the waits to end", func() bool { return in.Cluster.Waiters("k") == 0 })
	if l := holder.Line("UNLOCK", "k", "held"); l != ":1" {
		t.Fatalf("holder's UNLOCK = %q", l)
	}
	assertNotTakenByGone(t, in)
}

// assertNotTakenByGone checks, right after the holder's release, that the
// lock is free on every backend, and that another client gets it.
func assertNotTakenByGone(t *testing.T, in *redlocktest.Instance) {
	t.Helper()
	for i, s := range in.Backends {
		if v, err := s.Client().Get(ctxT(t), "k").Result(); err != redis.Nil {
			t.Errorf("backend %d holds k = %q (%v) after the release; want it free", i, v, err)
		}
	}
	c := in.Client(t, 2)
	if res, err := c.Do(ctxT(t), "LOCK", "k", 1000).Slice(); err != nil || len(res) != 2 {
		t.Fatalf("LOCK after the release = %v, %v; want it granted", res, err)
	}
}

// refusedOrPong opens a connection, sends PING and returns the first reply
// line: +PONG, or the refusal of a client over the limit.
func refusedOrPong(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "PING\r\n")
	l, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimSuffix(l, "\r\n")
}

// rawReply reads one reply whole (arrays of simple elements only).
func rawReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	l, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	switch l[0] {
	case '*':
		fmt.Sscanf(l, "*%d", &n)
	case '$':
		if fmt.Sscanf(l, "$%d", &n); n >= 0 {
			n = 1
		} else {
			n = 0
		}
	}
	for range n {
		l += rawReply(t, r)
	}
	return l
}

// TestHungUpWaiterTakesNothing: waiters that hang up while the lock is
// held stop waiting at once; when the holder releases, none of them takes
// the lock (before, one got it for its full ttl, held by nobody). The
// holder is on the waiters' proxy or on another one over the same
// backends, whose release wakes waiters across proxies.
func TestHungUpWaiterTakesNothing(t *testing.T) {
	for _, across := range []bool{false, true} {
		t.Run(map[bool]string{false: "same proxy", true: "other proxy"}[across], func(t *testing.T) {
			in := redlocktest.Start(t, redlocktest.Options{})
			holdVia := in
			if across {
				holdVia = redlocktest.StartOver(t, in.Backends, redlocktest.Options{})
			}
			holder := resptest.Dial(t, holdVia.Addr)
			holder.Send("LOCK", "k", "60000", "TOKEN", "held")
			rawReply(t, holder.R)
			hangUp(startWaiters(t, in, 5, "k"))
			pollFor(t, "the waits to end", func() bool { return in.Cluster.Waiters("k") == 0 })
			if l := holder.Line("UNLOCK", "k", "held"); l != ":1" {
				t.Fatalf("holder's UNLOCK = %q", l)
			}
			assertNotTakenByGone(t, in)
		})
	}
}

// TestHungUpPipelinedWaitersTakeNothing: waiters that pipeline LOCK …
// WAIT on two held keys (each wait started on the batch path, its refused
// first round going on waiting) and hang up stop waiting; once both
// holders release, neither key is taken by them.
func TestHungUpPipelinedWaitersTakeNothing(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	holder := resptest.Dial(t, in.Addr)
	for _, k := range []string{"k", "k2"} {
		holder.Send("LOCK", k, "60000", "TOKEN", "held")
		rawReply(t, holder.R)
	}
	hangUp(startWaiters(t, in, 5, "k", "k2"))
	pollFor(t, "the waits to end", func() bool { return in.Cluster.Waiters("k")+in.Cluster.Waiters("k2") == 0 })
	for _, k := range []string{"k2", "k"} {
		if l := holder.Line("UNLOCK", k, "held"); l != ":1" {
			t.Fatalf("holder's UNLOCK %s = %q", k, l)
		}
	}
	for i, s := range in.Backends {
		if v, err := s.Client().Get(ctxT(t), "k2").Result(); err != redis.Nil {
			t.Errorf("backend %d holds k2 = %q (%v) after the release; want it free", i, v, err)
		}
	}
	assertNotTakenByGone(t, in)
}

// serverSockets counts the proxy's accepted sockets that the kernel still
// has (any state but TIME_WAIT), from /proc/net/tcp.
func serverSockets(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	local := fmt.Sprintf(":%04X ", port)
	n := 0
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) > 3 && strings.HasSuffix(f[1]+" ", local) && f[3] != "0A" && f[3] != "06" {
			n++ // 0A: the listener; 06: TIME_WAIT, which holds no descriptor
		}
	}
	return n
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestManyHungUpWaitersLeaveNothing: hundreds of waiters hang up; their
// sockets, descriptors and goroutines all go (before, each kept its socket
// and goroutine until its wait ran out).
func TestManyHungUpWaitersLeaveNothing(t *testing.T) {
	const n = 300
	in := redlocktest.Start(t, redlocktest.Options{})
	holder := resptest.Dial(t, in.Addr)
	holder.Send("LOCK", "k", "60000", "TOKEN", "held")
	rawReply(t, holder.R)
	fds, gs := openFDs(t), runtime.NumGoroutine()
	hangUp(startWaiters(t, in, n, "k"))
	pollFor(t, "the waiters' sockets to close on the proxy", func() bool {
		return serverSockets(t, in.Port) == 1 // the holder's
	})
	pollFor(t, "the waits to end", func() bool { return in.Cluster.Waiters("k") == 0 })
	// Slack for the backends' connection pools, which may grow under the
	// waiters' rounds; each leftover waiter would count twice over it.
	const slack = 32
	pollFor(t, "descriptors back to what they were", func() bool { return openFDs(t) <= fds+slack })
	pollFor(t, "goroutines back to what they were", func() bool { return runtime.NumGoroutine() <= gs+slack })
	if l := holder.Line("UNLOCK", "k", "held"); l != ":1" {
		t.Fatalf("holder's UNLOCK = %q", l)
	}
	assertNotTakenByGone(t, in)
}

// TestWaitThenPipelined: a client that stays gets the commands it
// pipelined behind a blocking LOCK … WAIT (and those it sent while it
// waited) answered in order once the wait ends.
func TestWaitThenPipelined(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	holder := resptest.Dial(t, in.Addr)
	holder.Send("LOCK", "k", "60000", "TOKEN", "held")
	rawReply(t, holder.R)
	c := resptest.Dial(t, in.Addr)
	nc, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(nc, "LOCK k 1000 WAIT 20000 TOKEN w\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\n")
	pollFor(t, "the waiter", func() bool { return in.Cluster.Waiters("k") == 1 })
	io.WriteString(nc, "ECHO b\r\n*2\r\n$4\r\nEC")
	io.WriteString(nc, "HO\r\n$1\r\nc\r\nLOCK k 1000\r\n")
	if l := c.Line("PING"); l != "+PONG" {
		t.Fatalf("another client's PING during the wait = %q", l)
	}
	if l := holder.Line("UNLOCK", "k", "held"); l != ":1" {
		t.Fatalf("holder's UNLOCK = %q", l)
	}
	r := bufio.NewReader(nc)
	got := []string{rawReply(t, r), rawReply(t, r), rawReply(t, r), rawReply(t, r), rawReply(t, r), rawReply(t, r)}
	want := []string{"*2\r\n$1\r\nw\r\n:", "+PONG\r\n", "$1\r\na\r\n", "$1\r\nb\r\n", "$1\r\nc\r\n", "-1\r\n"}
	for i := range want {
		if i == 5 && got[i][1:] == want[i] {
			continue // a null, in whichever form
		}
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("reply %d = %q, want %q…; all: %q", i, got[i], want[i], got)
		}
	}
}

// TestWaitOverMaxWait: a WAIT longer than --max-wait is refused at once.
func TestWaitOverMaxWait(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := resptest.Dial(t, in.Addr)
	if l := c.Line("LOCK", "k", "1000", "WAIT", "2147483647"); l != "-ERR wait exceeds max-wait" {
		t.Fatalf("LOCK … WAIT 2147483647 = %q", l)
	}
	if l := c.Line("LOCK", "k", "1000", "WAIT", "3600000"); !strings.HasPrefix(l, "*2") {
		t.Fatalf("LOCK … WAIT 3600000 (the default max-wait) = %q", l)
	}
}

// TestPipelinedWaitersGetTheirLocks: a client that pipelines LOCK … WAIT
// on two held keys, one plain and one a reader behind a writer (each wait
// started on the batch path, its refused first round going on waiting),
// gets both locks, in order, once the holders release; the backends then
// hold the waiter's tokens.
func TestPipelinedWaitersGetTheirLocks(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	holder := resptest.Dial(t, in.Addr)
	for _, k := range []string{"k", "k2"} {
		holder.Send("LOCK", k, "60000", "TOKEN", "held")
		rawReply(t, holder.R)
	}
	nc, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	// One write: the two commands are one pipelined batch.
	io.WriteString(nc, "LOCK k 60000 WAIT 30000 TOKEN mine\r\nLOCK k2 60000 SHARED WAIT 30000\r\n")
	r := bufio.NewReader(nc)
	pollFor(t, "both waits", func() bool { return in.Cluster.Waiters("k") == 1 && in.Cluster.Waiters("k2") == 1 })
	for _, k := range []string{"k2", "k"} {
		if l := holder.Line("UNLOCK", k, "held"); l != ":1" {
			t.Fatalf("holder's UNLOCK %s = %q", k, l)
		}
	}
	if l := rawReply(t, r); !strings.HasPrefix(l, "*2\r\n$4\r\nmine\r\n") {
		t.Fatalf("the plain waiter's reply = %q, want its grant first", l)
	}
	l := rawReply(t, r)
	if !strings.HasPrefix(l, "*2\r\n$") {
		t.Fatalf("the reader's reply = %q, want a grant", l)
	}
	reader := strings.Split(l, "\r\n")[2]
	if v := in.BackendValues(t, "k"); redlocktest.Count(v, "mine") != len(v) {
		t.Fatalf("backends hold k = %v, want the waiter's token everywhere", v)
	}
	if l := holder.Line("UNLOCK", "k2", reader); l != ":1" {
		t.Fatalf("UNLOCK of the reader's lock = %q", l)
	}
}
