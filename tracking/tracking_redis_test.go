package tracking_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// wire is a raw connection that sends commands and reads what comes back
// up to a marker, so that whole replies (pushes included) are compared.
type wire struct {
	t   *testing.T
	nc  net.Conn
	buf []byte
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc}
}

func encode(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// until reads until want has arrived, and returns everything read up to
// and including it (within 20 s, or the test fails).
func (w *wire) until(want string) string {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	tmp := make([]byte, 4096)
	for {
		if i := bytes.Index(w.buf, []byte(want)); i >= 0 {
			out := string(w.buf[:i+len(want)])
			w.buf = w.buf[i+len(want):]
			return out
		}
		n, err := w.nc.Read(tmp)
		if err != nil {
			w.t.Fatalf("waiting for %q (have %q): %v", want, w.buf, err)
		}
		w.buf = append(w.buf, tmp[:n]...)
	}
}

// do sends cmds in one write and returns their replies, read up to an
// ECHO's marker.
func (w *wire) do(cmds ...string) string {
	w.t.Helper()
	var out []byte
	for _, c := range cmds {
		out = append(out, encode(strings.Fields(c))...)
	}
	out = append(out, encode([]string{"ECHO", "--end--"})...)
	if _, err := w.nc.Write(out); err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSuffix(w.until("$7\r\n--end--\r\n"), "$7\r\n--end--\r\n")
}

// hello3 switches to RESP3, dropping HELLO's reply (server, version and
// id differ).
func (w *wire) hello3() {
	w.t.Helper()
	w.do("HELLO 3")
}

// compare runs each sequence on a fresh connection to redis and to the
// proxy, and wants the same bytes back.
func compare(t *testing.T, redis, proxy string, resp3 bool, seqs [][]string) {
	t.Helper()
	for _, seq := range seqs {
		r, p := dial(t, redis), dial(t, proxy)
		if resp3 {
			r.hello3()
			p.hello3()
		}
		want, got := r.do(seq...), p.do(seq...)
		if want != got {
			t.Errorf("%q:\nredis: %q\nproxy: %q", seq, want, got)
		}
	}
}

var trackingSeqs = [][]string{
	{"CLIENT TRACKINGINFO", "CLIENT GETREDIR", "CLIENT CACHING YES", "CLIENT TRACKING", "CLIENT TRACKING maybe", "CLIENT GETREDIR x"},
	{"CLIENT TRACKING ON OPTIN", "CLIENT TRACKINGINFO", "CLIENT GETREDIR", "CLIENT CACHING YES", "CLIENT TRACKINGINFO",
		"CLIENT CACHING NO", "CLIENT CACHING maybe", "CLIENT CACHING", "CLIENT TRACKING ON OPTOUT", "CLIENT TRACKING ON BCAST",
		"CLIENT TRACKING ON OPTIN", "CLIENT TRACKING OFF", "CLIENT TRACKINGINFO"},
	{"CLIENT TRACKING ON OPTOUT NOLOOP", "CLIENT CACHING NO", "CLIENT CACHING YES", "CLIENT TRACKINGINFO"},
	{"CLIENT TRACKING ON BCAST PREFIX a PREFIX ab", "CLIENT TRACKING ON PREFIX a", "CLIENT TRACKING ON OPTIN OPTOUT",
		"CLIENT TRACKING ON BCAST OPTIN", "CLIENT TRACKING ON REDIRECT 999999", "CLIENT TRACKING ON REDIRECT x",
		"CLIENT TRACKING ON REDIRECT", "CLIENT TRACKING ON BLAH", "CLIENT TRACKING ON BCAST PREFIX ab",
		"CLIENT TRACKING ON BCAST PREFIX a", "CLIENT TRACKING ON BCAST PREFIX c", "CLIENT TRACKINGINFO"},
	{"CLIENT TRACKING ON BCAST", "CLIENT TRACKINGINFO", "CLIENT TRACKING ON", "CLIENT TRACKING OFF", "CLIENT TRACKING ON NOLOOP", "CLIENT TRACKINGINFO"},
	{"READONLY", "READWRITE", "CLIENT NO-EVICT on", "CLIENT NO-EVICT maybe", "CLIENT NO-EVICT"},
	// CACHING YES covers the next command only, also one that a pipeline
	// runs alongside others.
	{"CLIENT TRACKING ON OPTIN", "CLIENT CACHING YES", "SET trk:c v NX PX 10000", "SET trk:d v NX PX 10000",
		"CLIENT TRACKINGINFO", "DEL trk:c trk:d"},
}

var multiSeqs = [][]string{
	{"EXEC", "DISCARD", "MULTI", "MULTI", "GET tx:a", "FOO", "GET", "EXEC"},
	{"MULTI", "MULTI", "GET tx:a", "EXEC"},
	{"MULTI", "WATCH tx:x", "UNWATCH", "GET tx:a", "PTTL tx:a", "EXISTS tx:a tx:b", "EXEC"},
	{"WATCH tx:x", "UNWATCH", "MULTI", "PING", "ECHO hi", "EXEC"},
	{"MULTI", "DISCARD", "MULTI", "EXEC"},
	{"MULTI", "SET tx:a", "DISCARD", "EXEC"},
	{"MULTI", "SET tx:a 1 PX abc", "GET tx:a", "EXEC"},
	{"CLIENT TRACKING ON OPTIN", "CLIENT CACHING YES", "MULTI", "PTTL tx:k", "GET tx:k", "EXEC", "CLIENT TRACKINGINFO"},
	{"MULTI", "SET tx:w tok NX PX 10000", "SET tx:w tok2 NX PX 10000", "GET tx:w", "PTTL tx:nope", "DEL tx:w", "EXEC"},
}

// TestRepliesMatchRedis: CLIENT TRACKING, CACHING, TRACKINGINFO,
// GETREDIR, READONLY and the transactions answer, byte for byte, as a
// redis-server does, in RESP2 and RESP3.
func TestRepliesMatchRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	proxy := redlocktest.Start(t, redlocktest.Options{}).Addr
	seqs := append(append([][]string{}, trackingSeqs...), multiSeqs...)
	t.Run("resp2", func(t *testing.T) { compare(t, redis, proxy, false, seqs) })
	t.Run("resp3", func(t *testing.T) { compare(t, redis, proxy, true, seqs) })
}

// pushOf is the RESP3 invalidation push of keys.
func pushOf(keys ...string) string {
	s := fmt.Sprintf(">2\r\n$10\r\ninvalidate\r\n*%d\r\n", len(keys))
	for _, k := range keys {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)
	}
	return s
}

// messageOf is the RESP2 message on __redis__:invalidate of keys.
func messageOf(keys ...string) string {
	s := fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*%d\r\n", len(keys))
	for _, k := range keys {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)
	}
	return s
}

// TestInvalidationAcrossProxies: a client that read a key through one
// proxy is told when the key changes through the other proxy, when it
// expires, in RESP3 (push) and in RESP2 (REDIRECT to a subscribed
// connection); a BCAST client hears of its prefix; the proxy's own keys
// are never reported.
func TestInvalidationAcrossProxies(t *testing.T) {
	a := redlocktest.Start(t, redlocktest.Options{})
	b := redlocktest.StartOver(t, a.Backends, redlocktest.Options{})
	invalidationScenario(t, a.Addr, b.Addr)
}

// TestInvalidationEmbedded: the same over in-memory nodes (embedded
// mode), where one proxy serves both sides.
func TestInvalidationEmbedded(t *testing.T) {
	a := redlocktest.StartMemory(t, redlocktest.Options{})
	invalidationScenario(t, a.Addr, a.Addr)
}

// nextPush reads the next invalidation push of a RESP3 connection that
// gets nothing else: its keys, or flush for a null.
func (w *wire) nextPush() (keys []string, flush bool) {
	w.t.Helper()
	head := []byte(">2\r\n$10\r\ninvalidate\r\n")
	w.fill(len(head) + 3)
	if !bytes.HasPrefix(w.buf, head) {
		w.t.Fatalf("not an invalidation push: %q", w.buf)
	}
	w.buf = w.buf[len(head):]
	line := w.line()
	if line == "_" {
		return nil, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "*"))
	if err != nil {
		w.t.Fatalf("invalidation push with %q", line)
	}
	for range n {
		w.line() // $len
		keys = append(keys, w.line())
	}
	return keys, false
}

// line reads one CRLF-terminated line.
func (w *wire) line() string {
	w.t.Helper()
	for {
		if i := bytes.Index(w.buf, []byte("\r\n")); i >= 0 {
			l := string(w.buf[:i])
			w.buf = w.buf[i+2:]
			return l
		}
		w.fill(len(w.buf) + 1)
	}
}

// fill reads until w.buf holds n bytes (within 20 s).
func (w *wire) fill(n int) {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	tmp := make([]byte, 4096)
	for len(w.buf) < n {
		k, err := w.nc.Read(tmp)
		if err != nil {
			w.t.Fatalf("reading (have %q): %v", w.buf, err)
		}
		w.buf = append(w.buf, tmp[:k]...)
	}
}

// warmUp turns the backends' reports on (the first client that tracks
// does) and waits until each of the n nodes has reported a change: after
// that no node's first report (a flush) is still to come. A report may
// name several keys (a backend batches the changes of one moment).
func warmUp(t *testing.T, addrA, addrB string, n int) {
	t.Helper()
	bc, writer := dial(t, addrA), dial(t, addrB)
	bc.hello3()
	bc.do("CLIENT TRACKING ON BCAST PREFIX warm:")
	for i := 0; ; i++ {
		key := fmt.Sprintf("warm:%d", i)
		writer.do("SET " + key + " x NX PX 60000")
		copies := 0
		for copies < n {
			keys, flush := bc.nextPush()
			if flush {
				break // this round may not be every node's
			}
			if slices.Contains(keys, key) {
				copies++
			}
		}
		if copies == n {
			return
		}
	}
}

func invalidationScenario(t *testing.T, addrA, addrB string) {
	warmUp(t, addrA, addrB, 3)
	reader, writer := dial(t, addrA), dial(t, addrB)
	reader.hello3()
	if got := reader.do("CLIENT TRACKING ON", "GET inv:k"); got != "+OK\r\n_\r\n" {
		t.Fatalf("tracking on, GET = %q", got)
	}
	if got := writer.do("SET inv:k tok NX PX 60000"); got != "+OK\r\n" {
		t.Fatalf("SET through the other proxy = %q", got)
	}
	reader.until(pushOf("inv:k"))

	// Read again, then released through the other proxy.
	reader.do("GET inv:k")
	writer.do("DEL inv:k")
	reader.until(pushOf("inv:k"))

	// Read until it expires: each read that found it is followed by an
	// invalidation (the last one by the expiry's).
	writer.do("SET inv:short tok NX PX 300")
	for reader.do("GET inv:short") != "_\r\n" {
		reader.until(pushOf("inv:short"))
	}

	// RESP2: invalidations redirected to a subscribed connection.
	sub, r2 := dial(t, addrA), dial(t, addrA)
	id := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT ID"), ":"), "\r\n")
	sub.nc.Write(encode([]string{"SUBSCRIBE", "__redis__:invalidate"}))
	sub.until("__redis__:invalidate\r\n:1\r\n")
	if got := r2.do("CLIENT TRACKING ON REDIRECT "+id, "CLIENT GETREDIR", "GET inv:r2"); got != "+OK\r\n:"+id+"\r\n$-1\r\n" {
		t.Fatalf("redirect = %q", got)
	}
	writer.do("SET inv:r2 tok NX PX 60000")
	sub.until(messageOf("inv:r2"))

	// BCAST with a prefix: changes of other keys, and of the proxy's own
	// keys (a fenced, owned lock keeps some), are never reported.
	bc := dial(t, addrA)
	bc.hello3()
	bc.do("CLIENT TRACKING ON BCAST PREFIX bc:")
	writer.do("LOCK other 60000 FENCE OWNER me", "LOCK bc:x 60000 FENCE OWNER me")
	got := bc.until(pushOf("bc:x"))
	if strings.Contains(got, "other") || strings.Contains(got, "redlockd:") {
		t.Fatalf("BCAST bc: got %q", got)
	}
	all := dial(t, addrA)
	all.hello3()
	all.do("CLIENT TRACKING ON BCAST")
	writer.do("LOCK all:y 60000 FENCE OWNER me")
	if got := all.until(pushOf("all:y")); strings.Contains(got, "redlockd:") {
		t.Fatalf("BCAST without prefix reported the proxy's keys: %q", got)
	}
}

// TestWatchMatchesRedis: EXEC after WATCH answers as redis-server does,
// an array when the watched key is unchanged and a null array once a
// change of it was reported (here through another connection).
func TestWatchMatchesRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	proxy := redlocktest.Start(t, redlocktest.Options{}).Addr
	warmUp(t, proxy, proxy, 3)
	var replies []string
	for _, side := range []struct {
		addr   string
		copies int // reports of one change a BCAST client gets
	}{{redis, 1}, {proxy, 3}} {
		w, other, spy := dial(t, side.addr), dial(t, side.addr), dial(t, side.addr)
		spy.hello3()
		spy.do("CLIENT TRACKING ON BCAST PREFIX watch:")
		got := w.do("WATCH watch:k", "MULTI", "GET watch:k", "EXEC")
		w.do("WATCH watch:k")
		other.do("SET watch:k v NX PX 60000")
		for range side.copies {
			spy.until(pushOf("watch:k"))
		}
		got += w.do("MULTI", "GET watch:k", "EXEC", "UNWATCH", "MULTI", "GET watch:k", "EXEC")
		replies = append(replies, got)
	}
	if replies[0] != replies[1] {
		t.Fatalf("WATCH:\nredis: %q\nproxy: %q", replies[0], replies[1])
	}
}

// TestBrokenRedirectMatchesRedis: when the connection that a client's
// invalidations go to is gone, the next invalidation tells the client
// so (["tracking-redir-broken", id]) and TRACKINGINFO shows it, as
// redis-server does.
func TestBrokenRedirectMatchesRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	in := redlocktest.Start(t, redlocktest.Options{})
	warmUp(t, in.Addr, in.Addr, 3)
	var got []string
	for _, addr := range []string{redis, in.Addr} {
		target, reader, writer := dial(t, addr), dial(t, addr), dial(t, addr)
		id := strings.TrimSuffix(strings.TrimPrefix(target.do("CLIENT ID"), ":"), "\r\n")
		reader.hello3()
		reader.do("CLIENT TRACKING ON REDIRECT "+id, "GET rb:k")
		target.nc.Close()
		// The target is gone once a connection listing shows no id=<id>.
		for strings.Contains(writer.do("CLIENT LIST"), "id="+id+" ") {
		}
		writer.do("SET rb:k v NX PX 60000")
		want := ">2\r\n$21\r\ntracking-redir-broken\r\n:" + id + "\r\n"
		reader.until(want)
		got = append(got, strings.ReplaceAll(reader.do("CLIENT TRACKINGINFO"), ":"+id+"\r\n", ":ID\r\n"))
	}
	if got[0] != got[1] {
		t.Fatalf("TRACKINGINFO after a broken redirect:\nredis: %q\nproxy: %q", got[0], got[1])
	}
}

// TestFirstWatchOfAProxy: the first WATCH a proxy ever serves (which turns
// the backends' reports on) guards its transaction as redis-server's does:
// go-redis's optimistic transaction commits when nobody touched the key.
// The nodes' first reports (which only say that changes were not heard
// until then) come before the WATCH answers, so they do not abort it.
func TestFirstWatchOfAProxy(t *testing.T) {
	for _, side := range []struct {
		name string
		addr func() string
	}{
		{"redis-server", func() string { return redistest.Start(t).Addr() }},
		{"proxy over redis-servers", func() string { return redlocktest.Start(t, redlocktest.Options{}).Addr }},
		{"embedded", func() string { return redlocktest.StartMemory(t, redlocktest.Options{}).Addr }},
	} {
		t.Run(side.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: side.addr(), MaxRetries: -1})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := c.Watch(ctx, func(tx *redis.Tx) error {
				if err := tx.Get(ctx, "first:k").Err(); err != redis.Nil {
					return fmt.Errorf("GET before: %v", err)
				}
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.SetNX(ctx, "first:k", "tok", time.Minute)
					return nil
				})
				return err
			}, "first:k")
			if err != nil {
				t.Fatalf("the first WATCHed transaction: %v", err)
			}
			if v, err := c.Get(ctx, "first:k").Result(); err != nil || v != "tok" {
				t.Fatalf("GET after the transaction = %q, %v", v, err)
			}
		})
	}
}

// TestCachingWordInAPipeline: CLIENT CACHING NO (OPTOUT) covers the one
// command after it even when the commands after it come in the same
// write, which the proxy could otherwise run at once: the reads after
// the first stay tracked, so their changes are reported, as by
// redis-server.
func TestCachingWordInAPipeline(t *testing.T) {
	redis := redistest.Start(t).Addr()
	proxy := redlocktest.Start(t, redlocktest.Options{}).Addr
	warmUp(t, proxy, proxy, 3)
	for _, addr := range []string{redis, proxy} {
		reader, writer := dial(t, addr), dial(t, addr)
		reader.hello3()
		reader.do("CLIENT TRACKING ON OPTOUT")
		got := reader.do("CLIENT CACHING NO", "GET pipe:a", "GET pipe:b", "GET pipe:c", "GET pipe:d",
			"CLIENT TRACKINGINFO")
		if !strings.HasPrefix(got, "+OK\r\n_\r\n_\r\n_\r\n_\r\n") || strings.Contains(got, "caching-no") {
			t.Fatalf("%s: the pipeline = %q", addr, got)
		}
		writer.do("SET pipe:b v NX PX 60000", "SET pipe:c v NX PX 60000", "SET pipe:d v NX PX 60000")
		want := map[string]bool{"pipe:b": true, "pipe:c": true, "pipe:d": true}
		for len(want) > 0 {
			keys, flush := reader.nextPush()
			if flush {
				t.Fatalf("%s: a flush before the reports of %v", addr, want)
			}
			for _, k := range keys {
				delete(want, k)
			}
		}
		writer.do("DEL pipe:b pipe:c pipe:d")
	}
}

// TestClientInfoMatchesRedis: CLIENT LIST's flags, sub, psub, multi and
// redir fields (CLIENT INFO's line) say what redis-server's say of a
// connection that tracks, broadcasts, redirects, subscribes or is in a
// transaction, as another connection sees it.
func TestClientInfoMatchesRedis(t *testing.T) {
	redis := redistest.Start(t).Addr()
	proxy := redlocktest.Start(t, redlocktest.Options{}).Addr
	fields := []string{"flags", "db", "sub", "psub", "multi", "redir", "resp"}
	// pick is the fields of the line of client id in a CLIENT LIST
	// reply, with the id target (a redirect's) written as "target".
	pick := func(list, id, target string) string {
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, "id="+id+" ") {
				continue
			}
			var out []string
			for _, f := range strings.Fields(line) {
				for _, name := range fields {
					if strings.HasPrefix(f, name+"=") {
						out = append(out, strings.Replace(f, "redir="+target, "redir=target", 1))
					}
				}
			}
			return strings.Join(out, " ")
		}
		return "no line of id " + id
	}
	idOf := func(w *wire) string {
		return strings.TrimSuffix(strings.TrimPrefix(w.do("CLIENT ID"), ":"), "\r\n")
	}
	for _, resp3 := range []bool{false, true} {
		for _, seq := range [][]string{
			{},
			{"CLIENT TRACKING ON"},
			{"CLIENT TRACKING ON OPTIN"},
			{"CLIENT TRACKING ON BCAST PREFIX a"},
			{"CLIENT TRACKING ON", "CLIENT TRACKING OFF", "SELECT 3"},
			{"MULTI", "PING", "GET k"},
			{"SUBSCRIBE c1 c2", "PSUBSCRIBE p*"},
			{"CLIENT TRACKING ON REDIRECT target"},
		} {
			var got [2]string
			for i, addr := range []string{redis, proxy} {
				w, observer, target := dial(t, addr), dial(t, addr), dial(t, addr)
				if resp3 {
					w.hello3()
				}
				id, targetID := idOf(w), idOf(target)
				var out []byte
				for _, c := range seq {
					out = append(out, encode(strings.Fields(strings.Replace(c, "target", targetID, 1)))...)
				}
				if _, err := w.nc.Write(append(out, encode([]string{"PING", "last"})...)); err != nil {
					t.Fatal(err)
				}
				switch {
				case len(seq) > 0 && seq[0] == "MULTI":
					w.until("+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n") // the last PING is queued too
				case strings.HasPrefix(strings.Join(seq, " "), "SUBSCRIBE") && !resp3:
					w.until("$4\r\nlast\r\n") // a RESP2 subscriber's PING answers ["pong", "last"]
				default:
					w.until("last\r\n")
				}
				got[i] = pick(observer.do("CLIENT LIST"), id, targetID)
			}
			if got[0] != got[1] {
				t.Errorf("resp3=%v after %q:\nredis: %s\nproxy: %s", resp3, seq, got[0], got[1])
			}
		}
	}
}
