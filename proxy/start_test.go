package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// A pipelined batch of locks runs without a worker per command: each SET
// NX PX is started in its asynchronous form and answered by its round's
// last reply (from delayed in-memory nodes' goroutines, and from real
// redis-servers' connection readers). Commands without such
// a form (GET) still go to workers, which shows the count is live.
func TestPipelinedLocksNeedNoWorker(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		var nodes []quorum.Node
		for i := range 3 {
			m := faultnode.Wrap(embedded.New(fmt.Sprintf("slow-%d", i)))
			m.SetDelay(2 * time.Millisecond) // every reply comes from another goroutine
			nodes = append(nodes, m)
		}
		pipelineNeedsNoWorker(t, nodes)
	})
	t.Run("redis", func(t *testing.T) {
		var nodes []quorum.Node
		for range 3 {
			n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			nodes = append(nodes, n)
		}
		pipelineNeedsNoWorker(t, nodes)
	})
}

func pipelineNeedsNoWorker(t *testing.T, nodes []quorum.Node) {
	const depth = 16
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second // a loaded machine must not turn this into a test of timeouts
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	var sets, gets []byte
	var want strings.Builder
	for i := range depth {
		k := fmt.Sprintf("k%d", i)
		sets = append(sets, request("SET", k, "tok", "NX", "PX", "10000")...)
		gets = append(gets, request("GET", k)...)
		want.WriteString("+OK\r\n")
	}
	s, st := replayServer(t, cluster, [][]byte{sets, gets})
	t.Cleanup(func() { close(s.work) })
	batch, err := st.rd.next()
	if err != nil || len(batch) != depth {
		t.Fatalf("next = %d requests, %v", len(batch), err)
	}
	s.serveBatch(st, batch)
	if out := string(st.nc.(*replayConn).out); out != want.String() {
		t.Fatalf("replies %q, want %q", out, want.String())
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined locks ran on a worker, want none", n, depth)
	}
	if batch, err = st.rd.next(); err != nil {
		t.Fatal(err)
	}
	s.serveBatch(st, batch)
	if n := s.tasks.Load(); n != depth-1 {
		t.Fatalf("%d pipelined GETs ran on a worker, want %d", n, depth-1)
	}
}

// A pipelined batch of releases runs without a worker too: UNLOCK,
// DELIFEQ and the compare-and-delete script (EVALSHA and EVAL) of plain
// locks are started in their asynchronous form, answer in order, and
// leave none of the locks on any backend.
func TestPipelinedUnlocksNeedNoWorker(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		var nodes []quorum.Node
		for i := range 3 {
			m := faultnode.Wrap(embedded.New(fmt.Sprintf("slow-%d", i)))
			m.SetDelay(2 * time.Millisecond)
			nodes = append(nodes, m)
		}
		unlocksNeedNoWorker(t, nodes)
	})
	t.Run("redis", func(t *testing.T) {
		var nodes []quorum.Node
		for range 3 {
			n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			nodes = append(nodes, n)
		}
		unlocksNeedNoWorker(t, nodes)
	})
}

// releaseBody is the compare-and-delete release script (docs/commands.md, EVAL).
const releaseBody = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func unlocksNeedNoWorker(t *testing.T, nodes []quorum.Node) {
	const depth = 16
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	var sets, releases []byte
	var want strings.Builder
	for i := range depth {
		k := fmt.Sprintf("k%d", i)
		sets = append(sets, request("SET", k, "tok", "NX", "PX", "10000")...)
		switch i % 4 {
		case 0:
			releases = append(releases, request("UNLOCK", k, "tok")...)
		case 1:
			releases = append(releases, request("DELIFEQ", k, "tok")...)
		case 2:
			releases = append(releases, request("EVALSHA", releaseSHA, "1", k, "tok")...)
		default:
			releases = append(releases, request("EVAL", releaseBody, "1", k, "tok")...)
		}
		want.WriteString("+OK\r\n")
	}
	// One that is not held: its 0 must keep its place too.
	releases = append(releases, request("UNLOCK", "free", "tok")...)
	s, st := replayServer(t, cluster, [][]byte{append(sets, releases...)})
	t.Cleanup(func() { close(s.work) })
	batch, err := st.rd.next()
	if err != nil || len(batch) != 2*depth+1 {
		t.Fatalf("next = %d requests, %v", len(batch), err)
	}
	s.serveBatch(st, batch)
	want.WriteString(strings.Repeat(":1\r\n", depth) + ":0\r\n")
	if out := string(st.nc.(*replayConn).out); out != want.String() {
		t.Fatalf("replies %q, want %q", out, want.String())
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined locks and releases ran on a worker, want none", n, 2*depth+1)
	}
	for i := range depth {
		k := fmt.Sprintf("k%d", i)
		for _, n := range nodes {
			if rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.Get, Key: k}); rep.Err != nil || rep.OK {
				t.Errorf("%s on %s after its release: held %v (%q), %v", k, n.Name(), rep.OK, rep.Token, rep.Err)
			}
		}
	}
}

// An UNLOCK of an OWNER token or of a KEEPALIVE lock in a pipeline keeps
// their books as it does on its own: it drops one hold of the owner lock
// (the lock stays until the last one), and it stops the kept lock's
// renewal without counting it lost, next to a plain lock's release.
func TestPipelinedUnlockOfOwnerAndKeptLocks(t *testing.T) {
	var nodes []quorum.Node
	for range 3 {
		n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	owner := lockToken(r, "LOCK", "owned", "10000", "OWNER", "w1")
	if again := lockToken(r, "LOCK", "owned", "10000", "OWNER", "w1"); again != owner {
		t.Fatalf("second hold got token %q, want %q", again, owner)
	}
	kept := lockToken(r, "LOCK", "kept", "10000", "KEEPALIVE")
	r.send(string(request("SET", "plain", "p", "NX", "PX", "10000")))
	r.expect("+OK\r\n")

	r.send(string(append(append(request("UNLOCK", "owned", owner), request("UNLOCK", "kept", kept)...), request("UNLOCK", "plain", "p")...)))
	r.expect(":1\r\n:1\r\n:1\r\n")
	heldOnEvery(t, nodes, "owned", owner)
	heldOnEvery(t, nodes, "kept", "")
	heldOnEvery(t, nodes, "plain", "")
	info := ts.client(t).Info(t.Context(), "stats").Val()
	for _, want := range []string{"keepalive_held:0\r\n", "keepalive_lost:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO after the pipelined UNLOCK of the kept lock lacks %q:\n%s", want, info)
		}
	}

	r.send(string(append(request("UNLOCK", "owned", owner), request("UNLOCK", "plain", "p")...)))
	r.expect(":1\r\n:0\r\n")
	heldOnEvery(t, nodes, "owned", "")
}

// lockToken sends a LOCK command and returns the token it granted.
func lockToken(r *raw, args ...string) string {
	r.t.Helper()
	r.send(string(request(args...)))
	var lines []string
	for range 4 {
		l, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("%v: reply %q: %v", args, lines, err)
		}
		lines = append(lines, l)
	}
	if lines[0] != "*2\r\n" || lines[1][0] != '$' || lines[3][0] != ':' {
		r.t.Fatalf("%v: reply %q, want [token, validity]", args, lines)
	}
	return strings.TrimSuffix(lines[2], "\r\n")
}

// heldOnEvery checks that every node holds key with token ("": not at all).
func heldOnEvery(t *testing.T, nodes []quorum.Node, key, token string) {
	t.Helper()
	heldInDB(t, nodes, 0, key, token)
}

// heldInDB is heldOnEvery in database db.
func heldInDB(t *testing.T, nodes []quorum.Node, db int, key, token string) {
	t.Helper()
	for _, n := range nodes {
		rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.Get, Key: key, DB: db})
		if rep.Err != nil || rep.OK != (token != "") || rep.Token != token {
			t.Errorf("%s on %s: held %v by %q, %v; want %q", key, n.Name(), rep.OK, rep.Token, rep.Err, token)
		}
	}
}

// A pipelined release started without a worker releases in the database
// the connection selected before it, as the lock it releases was taken.
func TestPipelinedUnlockInSelectedDB(t *testing.T) {
	var nodes []quorum.Node
	for range 3 {
		n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	r.send(string(request("SELECT", "2")))
	r.expect("+OK\r\n")
	r.send(string(append(request("SET", "a", "t", "NX", "PX", "10000"), request("SET", "b", "t", "NX", "PX", "10000")...)))
	r.expect("+OK\r\n+OK\r\n")
	heldInDB(t, nodes, 2, "a", "t")
	heldInDB(t, nodes, 0, "a", "")
	r.send(string(append(request("UNLOCK", "a", "t"), request("EVALSHA", releaseSHA, "1", "b", "t")...)))
	r.expect(":1\r\n:1\r\n")
	heldInDB(t, nodes, 2, "a", "")
	heldInDB(t, nodes, 2, "b", "")
}

// Over RESP3, pipelined releases answer the same integers, in order.
func TestPipelinedUnlockRESP3(t *testing.T) {
	var nodes []quorum.Node
	for range 3 {
		n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	ts := startServer(t, Options{}, nodes...)
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 3, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	keys := []string{"a", "b", "c", "d"}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.SetNX(ctx, k, "t", 10*time.Second)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Do(ctx, "UNLOCK", k, "t")
		}
		p.Do(ctx, "UNLOCK", "a", "t")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range out {
		want := int64(1)
		if i == len(keys) {
			want = 0
		}
		if got, err := cmd.(*redis.Cmd).Int64(); err != nil || got != want {
			t.Errorf("%v: %d, %v; want %d", cmd.Args(), got, err, want)
		}
	}
	for _, k := range keys {
		heldOnEvery(t, nodes, k, "")
	}
}

// A pipelined batch of try-locks (LOCK key ttl, LOCK key ttl TOKEN t) runs
// without a worker, answered in order with LOCK's [token, validity]; a
// contended one answers null in its place. So does a batch of LOCK …
// FENCE, LOCK … KEEPALIVE, LOCK … OWNER and LOCK … PERMITS (the fence and
// the binding follow the rounds), and of RENEW, while a command without
// an asynchronous form (GET here) still runs on a worker.
func TestPipelinedTryLocksNeedNoWorker(t *testing.T) {
	var nodes []quorum.Node
	for range 3 {
		n, err := backend.NewRedis(redistest.Start(t).Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	const depth = 16
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second
	cluster, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	var locks, fenced, renews, gets []byte
	for i := range depth {
		k := fmt.Sprintf("k%d", i%(depth-1)) // the last one contends with the first
		if i%2 == 0 {
			locks = append(locks, request("LOCK", k, "10000")...)
		} else {
			locks = append(locks, request("LOCK", k, "10000", "TOKEN", fmt.Sprintf("t%d", i))...)
		}
		switch i % 4 {
		case 0:
			fenced = append(fenced, request("LOCK", fmt.Sprintf("f%d", i), "10000", "FENCE")...)
		case 1:
			fenced = append(fenced, request("LOCK", fmt.Sprintf("f%d", i), "10000", "KEEPALIVE", "FENCE")...)
		case 2:
			fenced = append(fenced, request("LOCK", fmt.Sprintf("f%d", i), "10000", "OWNER", "me", "FENCE")...)
		default:
			fenced = append(fenced, request("LOCK", fmt.Sprintf("f%d", i), "10000", "PERMITS", "2", "FENCE")...)
		}
		renews = append(renews, request("RENEW", fmt.Sprintf("r%d", i), "t", "10000")...)
		gets = append(gets, request("GET", fmt.Sprintf("r%d", i))...)
	}
	s, st := replayServer(t, cluster, [][]byte{locks, fenced, renews, gets})
	t.Cleanup(func() { close(s.work) })
	rc := st.nc.(*replayConn)
	rc.keep = true // a batch's replies may take more than one write
	batch, err := st.rd.next()
	if err != nil || len(batch) != depth {
		t.Fatalf("next = %d requests, %v", len(batch), err)
	}
	s.serveBatch(st, batch)
	out := string(rc.out)
	if n := strings.Count(out, "*2\r\n"); n != depth-1 {
		t.Fatalf("%d granted LOCK replies in %q, want %d", n, out, depth-1)
	}
	if !strings.HasSuffix(out, "*-1\r\n") && !strings.HasSuffix(out, "$-1\r\n") {
		t.Fatalf("the contended last LOCK did not answer null last: %q", out)
	}
	if !strings.Contains(out, "$2\r\nt1\r\n") || !strings.Contains(out, "$2\r\nt3\r\n") {
		t.Fatalf("LOCK … TOKEN replies lack their tokens: %q", out)
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined try-locks ran on a worker, want none", n, depth)
	}
	if batch, err = st.rd.next(); err != nil {
		t.Fatal(err)
	}
	rc.out = nil
	s.serveBatch(st, batch)
	out = string(rc.out)
	if n := strings.Count(out, "*3\r\n"); n != depth {
		t.Fatalf("%d fenced LOCK replies in %q, want %d", n, out, depth)
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined LOCK … FENCE / KEEPALIVE / OWNER / PERMITS ran on a worker, want none", n, depth)
	}
	if batch, err = st.rd.next(); err != nil {
		t.Fatal(err)
	}
	rc.out = nil
	s.serveBatch(st, batch)
	if out = string(rc.out); strings.Count(out, "-1\r\n") != depth {
		t.Fatalf("RENEWs of locks nobody holds replied %q, want %d nulls", out, depth)
	}
	if n := s.tasks.Load(); n != 0 {
		t.Fatalf("%d of %d pipelined RENEWs ran on a worker, want none", n, depth)
	}
	if batch, err = st.rd.next(); err != nil {
		t.Fatal(err)
	}
	s.serveBatch(st, batch)
	if n := s.tasks.Load(); n == 0 {
		t.Fatal("pipelined GET ran without a worker")
	}
}
