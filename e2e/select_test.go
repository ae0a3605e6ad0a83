package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// dbClient is a go-redis client of addr in database db, made from a URL
// as an application makes it; the test's cleanup closes it.
func dbClient(t *testing.T, addr string, db int) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(fmt.Sprintf("redis://%s/%d", addr, db))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// dbValues reads key in database db of each backend directly.
func dbValues(t *testing.T, backends []*redistest.Server, db int, key string) []string {
	t.Helper()
	return redlocktest.ValuesIn(t, backends, db, key)
}

func wantOnAll(t *testing.T, backends []*redistest.Server, db int, key, want string) {
	t.Helper()
	// A lock is answered once a majority stored it: the last backend's
	// write, sent with the others, may land a moment later.
	deadline := time.Now().Add(2 * time.Second)
	for {
		vals := dbValues(t, backends, db, key)
		if redlocktest.Count(vals, want) == len(backends) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("db %d key %q on the backends = %v, want %q on every one", db, key, vals, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantGranted waits (bounded) until key in db holds want on a majority of
// backends and nothing else anywhere.
func wantGranted(t *testing.T, backends []*redistest.Server, db int, key, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		vals := dbValues(t, backends, db, key)
		held := redlocktest.Count(vals, want)
		if held > len(backends)/2 && held+redlocktest.Count(vals, "<nil>") == len(backends) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("db %d key %q on the backends = %v, want %q on a majority and nothing else", db, key, vals, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSelectLocksLiveInTheirDB: after SELECT 2, LOCK and SET NX PX land in
// db 2 of every backend and not in db 0; the same key in db 0 is another
// lock, held by another client at the same time.
func TestSelectLocksLiveInTheirDB(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c0, c2 := dbClient(t, in.Addr, 0), dbClient(t, in.Addr, 2)
	tok2, _ := lock(t, c2, "k", 30000)
	wantOnAll(t, in.Backends, 2, "k", tok2)
	wantOnAll(t, in.Backends, 0, "k", "<nil>")
	tok0, _ := lock(t, c0, "k", 30000)
	wantOnAll(t, in.Backends, 0, "k", tok0)
	wantOnAll(t, in.Backends, 2, "k", tok2)
	if ok, err := c2.SetNX(ctxT(t), "s", "v2", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET s NX PX in db 2 = %v, %v", ok, err)
	}
	wantOnAll(t, in.Backends, 2, "s", "v2")
	wantOnAll(t, in.Backends, 0, "s", "<nil>")
	if ok, err := c0.SetNX(ctxT(t), "s", "v0", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET s NX PX in db 0, held in db 2 = %v, %v", ok, err)
	}
	checkReadsPerDB(t, c0, c2, tok0, tok2)
	// Each db's UNLOCK knows its own token only.
	if n, err := c2.Do(ctxT(t), "UNLOCK", "k", tok0).Int(); err != nil || n != 0 {
		t.Fatalf("UNLOCK of db 0's token in db 2 = %d, %v", n, err)
	}
	if n, err := c2.Do(ctxT(t), "UNLOCK", "k", tok2).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK in db 2 = %d, %v", n, err)
	}
	wantOnAll(t, in.Backends, 2, "k", "<nil>")
	wantOnAll(t, in.Backends, 0, "k", tok0)
	if n, err := c2.Del(ctxT(t), "s").Result(); err != nil || n != 1 {
		t.Fatalf("DEL s in db 2 = %d, %v", n, err)
	}
	wantOnAll(t, in.Backends, 2, "s", "<nil>")
	wantOnAll(t, in.Backends, 0, "s", "v0")
}

// checkReadsPerDB: GET, PTTL, EXISTS and PEXPIRE read and change the
// connection's db only.
func checkReadsPerDB(t *testing.T, c0, c2 *redis.Client, tok0, tok2 string) {
	t.Helper()
	for _, x := range []struct {
		c   *redis.Client
		tok string
	}{{c0, tok0}, {c2, tok2}} {
		if v, err := x.c.Get(ctxT(t), "k").Result(); err != nil || v != x.tok {
			t.Fatalf("GET k = %q, %v; want %q", v, err, x.tok)
		}
	}
	if n, err := c2.Exists(ctxT(t), "k", "s", "none").Result(); err != nil || n != 2 {
		t.Fatalf("EXISTS in db 2 = %d, %v", n, err)
	}
	if ok, err := c2.PExpire(ctxT(t), "k", 50*time.Second).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE in db 2 = %v, %v", ok, err)
	}
	p2, err2 := c2.PTTL(ctxT(t), "k").Result()
	p0, err0 := c0.PTTL(ctxT(t), "k").Result()
	if err2 != nil || err0 != nil || p2 <= 40*time.Second || p0 > 30*time.Second || p0 <= 0 {
		t.Fatalf("PTTL after PEXPIRE 50s in db 2: db 2 %v (%v), db 0 %v (%v)", p2, err2, p0, err0)
	}
}

// TestSelectConnectionState: SELECT's errors are Redis's, CLIENT INFO and
// CLIENT LIST show the db, HELLO keeps it, RESET returns to db 0.
func TestSelectConnectionState(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	conn := in.Client(t, 2).Conn()
	defer conn.Close()
	ctx := ctxT(t)
	for _, bad := range []struct{ arg, want string }{
		{"16", "ERR DB index is out of range"},
		{"-1", "ERR DB index is out of range"},
		{"x", "ERR value is not an integer or out of range"},
	} {
		if err := conn.Do(ctx, "SELECT", bad.arg).Err(); err == nil || err.Error() != bad.want {
			t.Errorf("SELECT %s = %v, want %q", bad.arg, err, bad.want)
		}
	}
	clientInfo := func(want string) {
		t.Helper()
		s, err := conn.Do(ctx, "CLIENT", "INFO").Text()
		if err != nil || !strings.Contains(s, " "+want+" ") {
			t.Fatalf("CLIENT INFO = %q, %v; want %s", s, err, want)
		}
	}
	clientInfo("db=0")
	if err := conn.Do(ctx, "SELECT", 15).Err(); err != nil {
		t.Fatal(err)
	}
	clientInfo("db=15")
	if err := conn.Do(ctx, "HELLO", 3).Err(); err != nil {
		t.Fatal(err)
	}
	clientInfo("db=15")
	if s, err := conn.Do(ctx, "CLIENT", "LIST").Text(); err != nil || !strings.Contains(s, " db=15 ") {
		t.Fatalf("CLIENT LIST = %q, %v; want db=15", s, err)
	}
	tok15, _ := lock(t, conn, "r", 30000)
	wantOnAll(t, in.Backends, 15, "r", tok15)
	if s, err := conn.Do(ctx, "RESET").Text(); err != nil || s != "RESET" {
		t.Fatalf("RESET = %q, %v", s, err)
	}
	clientInfo("db=0")
	tok0, _ := lock(t, conn, "r", 30000)
	wantOnAll(t, in.Backends, 0, "r", tok0)
	wantOnAll(t, in.Backends, 15, "r", tok15)
}

// TestSelectFenceAndOwnerPerDB: db 3's fencing counter is its own, and an
// OWNER lock reenters in db 4 with its hold count there, while another
// owner holds the same key name in db 0.
func TestSelectFenceAndOwnerPerDB(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c0, c3, c4 := dbClient(t, in.Addr, 0), dbClient(t, in.Addr, 3), dbClient(t, in.Addr, 4)
	fence := func(c *redis.Client) int64 {
		t.Helper()
		res, err := c.Do(ctxT(t), "LOCK", "f", 30000, "FENCE").Slice()
		if err != nil || len(res) != 3 {
			t.Fatalf("LOCK f FENCE = %v, %v", res, err)
		}
		if n, err := c.Do(ctxT(t), "UNLOCK", "f", res[0]).Int(); err != nil || n != 1 {
			t.Fatalf("UNLOCK f = %d, %v", n, err)
		}
		return res[2].(int64)
	}
	// db 0's counter far ahead of the clock: a fence of db 3 that read it
	// would be above it.
	const high = 8000000000000000
	for _, s := range in.Backends {
		if err := s.Client().Set(ctxT(t), quorum.FenceKey("f"), high, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f0, f3 := fence(c0), fence(c3)
	if f0 != high+1 || f3 >= high {
		t.Fatalf("fences: db 0 %d, db 3 %d; want %d in db 0 and db 3's own counter below it", f0, f3, high+1)
	}
	wantOnAll(t, in.Backends, 3, quorum.FenceKey("f"), fmt.Sprint(f3))
	wantOnAll(t, in.Backends, 0, quorum.FenceKey("f"), fmt.Sprint(f0))
	tok, _ := lock(t, c4, "o", 30000, "OWNER", "a")
	if again, _ := lock(t, c4, "o", 30000, "OWNER", "a"); again != tok {
		t.Fatalf("OWNER a reentered in db 4 with token %q, first %q", again, tok)
	}
	other, _ := lock(t, c0, "o", 30000, "OWNER", "b")
	wantOnAll(t, in.Backends, 4, quorum.HoldsKey("o"), quorum.FormatHolds(tok, 2))
	wantOnAll(t, in.Backends, 0, "o", other)
	if res, err := c4.Do(ctxT(t), "LOCK", "o", 30000, "OWNER", "b").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK o OWNER b in db 4 = %v, %v; want null", res, err)
	}
	info, err := c4.Do(ctxT(t), "LOCKINFO", "o").Result()
	if err != nil || !strings.Contains(fmt.Sprint(info), "holds:2") {
		t.Fatalf("LOCKINFO o in db 4 = %v, %v; want holds 2", info, err)
	}
	for range 2 {
		if n, err := c4.Do(ctxT(t), "UNLOCK", "o", tok).Int(); err != nil || n != 1 {
			t.Fatalf("UNLOCK o in db 4 = %d, %v", n, err)
		}
	}
	wantOnAll(t, in.Backends, 4, "o", "<nil>")
	wantOnAll(t, in.Backends, 0, "o", other)
}

// TestSelectWaitWokenInItsDB: an UNLOCK in db 3 through one proxy wakes a
// WAIT in db 3 on the other proxy at once, while a waiter on the same key
// name in db 0 keeps waiting until db 0's lock is released.
func TestSelectWaitWokenInItsDB(t *testing.T) {
	backends := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	second := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	h0, h3 := dbClient(t, first.Addr, 0), dbClient(t, first.Addr, 3)
	tok0, _ := lock(t, h0, "w", 60000)
	tok3, _ := lock(t, h3, "w", 60000)
	// db 0's waiter comes first: a release that woke the oldest waiter of
	// the key name, whatever its db, would wake it rather than db 3's.
	w0 := lockWaiting(t, dbClient(t, second.Addr, 0), "w")
	w3 := lockWaiting(t, dbClient(t, second.Addr, 3), "w")
	released := time.Now()
	if n, err := h3.Do(ctxT(t), "UNLOCK", "w", tok3).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK in db 3 = %d, %v", n, err)
	}
	r := waitReply(t, w3)
	if d := r.at.Sub(released); d > wakeBound {
		t.Errorf("db 3 waiter got the lock %v after the release; its retry jitter is %v, so it was not woken", d, slowJitter)
	}
	// A woken waiter's round may reach a backend before the release
	// does there: Redlock grants it on a majority, and that backend is
	// left free.
	wantGranted(t, backends, 3, "w", r.res[0].(string))
	select {
	case r := <-w0:
		t.Fatalf("db 0 waiter returned %v, %v while db 0's lock is held", r.res, r.err)
	default:
	}
	if n := second.Cluster.DB(0).Waiters("w"); n != 1 {
		t.Fatalf("db 0 waiters on the second proxy = %d, want 1", n)
	}
	wantOnAll(t, backends, 0, "w", tok0)
	released = time.Now()
	if n, err := h0.Do(ctxT(t), "UNLOCK", "w", tok0).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK in db 0 = %d, %v", n, err)
	}
	if r := waitReply(t, w0); r.at.Sub(released) > wakeBound {
		t.Errorf("db 0 waiter got the lock %v after db 0's release: not woken", r.at.Sub(released))
	}
}

func waitReply(t *testing.T, ch <-chan lockReply) lockReply {
	t.Helper()
	var r lockReply
	select {
	case r = <-ch:
	case <-time.After(4 * slowJitter):
		t.Fatal("LOCK WAIT did not return")
	}
	if r.err != nil || len(r.res) != 2 {
		t.Fatalf("LOCK WAIT = %v, %v; want the lock", r.res, r.err)
	}
	return r
}

// TestSelectKeepaliveInItsDB: a KEEPALIVE lock taken in db 5 is renewed
// there past its ttl, and released there when its connection closes, as
// is a session lock; the same key in db 0 is not touched.
func TestSelectKeepaliveInItsDB(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	kc := dbClient(t, in.Addr, 5)
	const ttl = 600 * time.Millisecond
	tok, _ := lock(t, kc, "ka", ttl.Milliseconds(), "KEEPALIVE")
	c0 := dbClient(t, in.Addr, 0)
	lock(t, c0, "ka", 60000)
	// A DEL in db 0 ends db 0's lock only: db 5's renewals go on.
	if n, err := c0.Del(ctxT(t), "ka").Result(); err != nil || n != 1 {
		t.Fatalf("DEL ka in db 0 = %d, %v", n, err)
	}
	other, _ := lock(t, c0, "ka", 60000)
	// Without renewals in db 5 the lock would be gone from it after ttl.
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if vals := dbValues(t, in.Backends, 5, "ka"); redlocktest.Count(vals, tok) < 2 {
			t.Fatalf("db 5 holds %v, %v after the lock was taken: not renewed there", vals, time.Since(end.Add(-3*ttl)))
		}
	}
	wantOnAll(t, in.Backends, 0, "ka", other)
	lock(t, kc, "kb", 60000, "KEEPALIVE")
	// A session lock (no expiry) in db 5 is this proxy's too: PTTL -1 there.
	if ok, err := kc.SetNX(ctxT(t), "ks", "s5", 0).Result(); err != nil || !ok {
		t.Fatalf("SET ks NX in db 5 = %v, %v", ok, err)
	}
	if d, err := kc.PTTL(ctxT(t), "ks").Result(); err != nil || d != -1 {
		t.Fatalf("PTTL of the session lock in db 5 = %v, %v; want -1", d, err)
	}
	wantOnAll(t, in.Backends, 5, "ks", "s5")
	kc.Close()
	// kb's ttl is a minute and the session lock's 30s: they go well within
	// that only by their release.
	pollFor(t, "db 5's connection-bound locks released", func() bool {
		for _, k := range []string{"ka", "kb", "ks"} {
			if redlocktest.Count(dbValues(t, in.Backends, 5, k), "<nil>") != 3 {
				return false
			}
		}
		return true
	})
	wantOnAll(t, in.Backends, 0, "ka", other)
}

// TestSelectPipelinedBatch: a batch that mixes SELECT with SET NX PX,
// sent in one write, runs each SET (the asynchronous form, without a
// worker) in the db in force at its place in the batch.
func TestSelectPipelinedBatch(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	batch := [][]string{
		{"SET", "a", "t0", "NX", "PX", "30000"},
		{"SET", "b", "t0", "NX", "PX", "30000"},
		{"SELECT", "2"},
		{"SET", "a", "t2", "NX", "PX", "30000"},
		{"SET", "c", "t2", "NX", "PX", "30000"},
		{"SELECT", "0"},
		{"SET", "d", "t0", "NX", "PX", "30000"},
		{"SET", "e", "t0", "NX", "PX", "30000"},
	}
	for i, line := range sendBatch(t, in.Addr, batch) {
		if line != "+OK" {
			t.Fatalf("reply %d (%v) = %q, want +OK", i, batch[i], line)
		}
	}
	for key, want := range map[string][2]string{
		"a": {"t0", "t2"}, "b": {"t0", "<nil>"}, "c": {"<nil>", "t2"},
		"d": {"t0", "<nil>"}, "e": {"t0", "<nil>"},
	} {
		wantOnAll(t, in.Backends, 0, key, want[0])
		wantOnAll(t, in.Backends, 2, key, want[1])
	}
}

// sendBatch writes cmds in one write on a new connection and returns the
// first line of each reply.
func sendBatch(t *testing.T, addr string, cmds [][]string) []string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := io.WriteString(nc, b.String()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	tmp := make([]byte, 256)
	for strings.Count(string(buf), "\r\n") < len(cmds) {
		n, err := nc.Read(tmp)
		if err != nil {
			t.Fatalf("reading the replies (%q so far): %v", buf, err)
		}
		buf = append(buf, tmp[:n]...)
	}
	return strings.Split(strings.TrimSuffix(string(buf), "\r\n"), "\r\n")
}

// TestSelectEmbeddedDBs: in-memory nodes keep the dbs apart as Redis
// does: the same key in db 0 and db 2 is two locks, each stored in its own
// db of every node.
func TestSelectEmbeddedDBs(t *testing.T) {
	in := redlocktest.StartMemory(t, redlocktest.Options{})
	c0, c2 := dbClient(t, in.Addr, 0), dbClient(t, in.Addr, 2)
	tok2, _ := lock(t, c2, "k", 30000)
	tok0, _ := lock(t, c0, "k", 30000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A grant answers once a majority holds the key: a node may not have
	// it yet, but none holds another database's token.
	nodes := in.Cluster.Nodes()
	for db, want := range map[int]string{0: tok0, 2: tok2, 3: ""} {
		holding := 0
		for _, n := range nodes {
			rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Get, Key: "k", DB: db})
			if rep.Err != nil || (rep.Token != want && rep.Token != "") {
				t.Fatalf("node %s db %d holds %q (%v), want %q", n.Name(), db, rep.Token, rep.Err, want)
			}
			if rep.Token == want {
				holding++
			}
		}
		if holding < len(nodes)/2+1 {
			t.Fatalf("db %d: %d of %d nodes hold %q, want a majority", db, holding, len(nodes), want)
		}
	}
	if n, err := c2.Do(ctxT(t), "UNLOCK", "k", tok0).Int(); err != nil || n != 0 {
		t.Fatalf("UNLOCK of db 0's token in db 2 = %d, %v", n, err)
	}
	if n, err := c2.Do(ctxT(t), "UNLOCK", "k", tok2).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK in db 2 = %d, %v", n, err)
	}
	if v, err := c0.Get(ctxT(t), "k").Result(); err != nil || v != tok0 {
		t.Fatalf("GET k in db 0 after db 2's UNLOCK = %q, %v", v, err)
	}
	if _, err := c2.Get(ctxT(t), "k").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k in db 2 after its UNLOCK = %v, want null", err)
	}
}
