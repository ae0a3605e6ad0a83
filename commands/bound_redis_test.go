package commands

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Connection-bound locks (KEEPALIVE, session locks), OWNER and FENCE over
// three real redis-servers.

// redisHandler is a Handler over its own nodes to servers, as one proxy in
// front of them would be.
func redisHandler(t *testing.T, servers []*redistest.Server, opts Options) *Handler {
	t.Helper()
	return redisHandlerCfg(t, servers, opts, nil)
}

func redisHandlerCfg(t *testing.T, servers []*redistest.Server, opts Options, tune func(*quorum.Config)) *Handler {
	t.Helper()
	var nodes []quorum.Node
	for _, s := range servers {
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		t.Cleanup(func() { _ = n.Close() })
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 200 * time.Millisecond // generous: the machine is shared
	if tune != nil {
		tune(&cfg)
	}
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return New(cl, opts)
}

// warmUp opens, on every node of h, the connection that each key's
// commands travel, with a generous deadline: a node dials on first use and
// looks at the server then, which can use up the node timeout of a first
// command on a loaded machine.
func warmUp(t *testing.T, h *Handler, keys ...string) {
	t.Helper()
	for _, n := range h.cluster.Nodes() {
		for _, k := range keys {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _, _, err := nodetest.Get(ctx, n, k)
			cancel()
			if err != nil {
				t.Fatalf("warming up %s on %s: %v", k, n.Name(), err)
			}
		}
	}
}

// client opens a session on h, closed at the end of the test (if the test
// did not close it itself).
func client(t *testing.T, h *Handler) *fixture {
	t.Helper()
	f := &fixture{h: h, s: h.NewSession("127.0.0.1:1")}
	t.Cleanup(func() { h.CloseSession(f.s) })
	return f
}

// lockReply parses [token, validity(, fence)] or fails the test.
func lockReply(t *testing.T, got string) (token string, rest []int64) {
	t.Helper()
	if !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK reply = %q, want an array", got)
	}
	fields := strings.Fields(strings.Trim(got, "[]"))
	for _, f := range fields[1:] {
		n, err := strconv.ParseInt(strings.TrimPrefix(f, ":"), 10, 64)
		if err != nil {
			t.Fatalf("LOCK reply %q: %v", got, err)
		}
		rest = append(rest, n)
	}
	return fields[0][1:], rest
}

// holdFor checks every 50ms, for d, that key is held by token (as seen
// through obs).
func holdFor(t *testing.T, obs *fixture, key, token string, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if got := obs.do("GET", key); got != "$"+token {
			t.Fatalf("GET %s = %q after %v, want %s", key, got, d-time.Until(end), token)
		}
		time.Sleep(50 * time.Millisecond) // pacing the checks, not synchronisation
	}
}

// eventually polls cond until it holds or d has passed.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func infoField(t *testing.T, f *fixture, name string) string {
	t.Helper()
	for _, line := range strings.Split(f.do("INFO", "stats"), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO stats has no %s", name)
	return ""
}

func TestKeepaliveOutlivesTTLAndEndsWithConnection(t *testing.T) {
	h := redisHandler(t, redistest.StartN(t, 3), Options{})
	holder, obs := client(t, h), client(t, h)
	tok, _ := lockReply(t, holder.do("LOCK", "k", "400", "KEEPALIVE"))
	if got := infoField(t, obs, "keepalive_held"); got != "1" {
		t.Fatalf("keepalive_held = %s, want 1", got)
	}
	holdFor(t, obs, "k", tok, 1500*time.Millisecond) // well past the 400ms ttl
	if got := obs.do("LOCK", "k", "400"); got != "nil" {
		t.Fatalf("LOCK by another client while kept = %q", got)
	}
	h.CloseSession(holder.s)
	// CloseSession releases before it returns: no waiting for the ttl.
	if got := obs.do("GET", "k"); got != "nil" {
		t.Fatalf("GET after the holder's connection closed = %q", got)
	}
	if got := infoField(t, obs, "keepalive_held"); got != "0" {
		t.Fatalf("keepalive_held = %s after close, want 0", got)
	}
}

func TestKeepaliveUnlockStopsRenewal(t *testing.T) {
	h := redisHandler(t, redistest.StartN(t, 3), Options{})
	holder, other := client(t, h), client(t, h)
	holder.do("LOCK", "k", "300", "KEEPALIVE", "TOKEN", "shared")
	if got := holder.do("UNLOCK", "k", "shared"); got != ":1" {
		t.Fatalf("UNLOCK = %q", got)
	}
	// The same token again, without KEEPALIVE: if the renewal of the first
	// lock still ran, it would keep this one alive past its ttl.
	if got := other.do("LOCK", "k", "300", "TOKEN", "shared"); !strings.HasPrefix(got, "[$shared") {
		t.Fatalf("LOCK after UNLOCK = %q", got)
	}
	start := time.Now()
	eventually(t, 3*time.Second, "lock expired after its ttl", func() bool { return other.do("GET", "k") == "nil" })
	if time.Since(start) < 200*time.Millisecond {
		t.Fatalf("lock vanished before its ttl")
	}
	if got := infoField(t, other, "keepalive_held"); got != "0" {
		t.Fatalf("keepalive_held = %s after UNLOCK", got)
	}
}

func TestKeepaliveLostRenewalIsCounted(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandler(t, servers, Options{})
	holder := client(t, h)
	tok, _ := lockReply(t, holder.do("LOCK", "k", "600", "KEEPALIVE"))
	servers[0].Kill()
	servers[1].Kill()
	eventually(t, 5*time.Second, "keepalive_lost reaches 1", func() bool {
		return infoField(t, holder, "keepalive_lost") == "1"
	})
	if got := infoField(t, holder, "keepalive_held"); got != "0" {
		t.Fatalf("keepalive_held = %s after the loss", got)
	}
	if got := holder.do("RENEW", "k", tok, "600"); got != "nil" {
		t.Fatalf("RENEW of a lost lock = %q, want nil", got)
	}
	if got := holder.do("UNLOCK", "k", tok); got != ":0" {
		t.Fatalf("UNLOCK of a lost lock = %q, want :0", got)
	}
}

func TestSessionLock(t *testing.T) {
	// The session ttl leaves a renewal two thirds of it to get through: a
	// loaded machine can hold the proxy back for a good part of a second.
	const sessionTTL = time.Second
	h := redisHandler(t, redistest.StartN(t, 3), Options{SessionTTL: sessionTTL})
	warmUp(t, h, "k", "f")
	holder, obs := client(t, h), client(t, h)
	steps := []struct {
		f    *fixture
		cmd  []string
		want string
	}{
		{holder, []string{"SET", "k", "mine", "NX"}, "+OK"},
		{obs, []string{"SET", "k", "theirs", "NX"}, "nil"},
		{obs, []string{"PTTL", "k"}, ":-1"},
		{obs, []string{"TTL", "k"}, ":-1"},
		{holder, []string{"SET", "f", "forced"}, "+OK"}, // force without expiry
		{obs, []string{"PTTL", "f"}, ":-1"},
	}
	for _, st := range steps {
		if got := st.f.do(st.cmd...); got != st.want {
			t.Fatalf("%v = %q, want %q", st.cmd, got, st.want)
		}
	}
	holdFor(t, obs, "k", "mine", 5*sessionTTL/2) // well past the session ttl
	if got := obs.do("GET", "f"); got != "$forced" {
		t.Fatalf("forced session lock gone while its connection lives: %q", got)
	}
	h.CloseSession(holder.s)
	for _, k := range []string{"k", "f"} {
		if got := obs.do("GET", k); got != "nil" {
			t.Fatalf("GET %s after close = %q", k, got)
		}
	}
}

func TestSessionLockReleasedByScript(t *testing.T) {
	h := redisHandler(t, redistest.StartN(t, 3), Options{SessionTTL: 450 * time.Millisecond})
	holder := client(t, h)
	holder.do("SET", "k", "mine", "NX")
	// What redis-py's Lock(timeout=None).release() sends.
	if got := holder.do("EVAL", cadScript, "1", "k", "mine"); got != ":1" {
		t.Fatalf("release = %q", got)
	}
	if got := infoField(t, holder, "keepalive_held"); got != "0" {
		t.Fatalf("keepalive_held = %s after release", got)
	}
	if got := infoField(t, holder, "keepalive_lost"); got != "0" {
		t.Fatalf("a released session lock was counted lost: %s", got)
	}
}

func TestOwnerReentrantAcrossProxies(t *testing.T) {
	servers := redistest.StartN(t, 3)
	a, b := client(t, redisHandler(t, servers, Options{})), client(t, redisHandler(t, servers, Options{}))
	tok, _ := lockReply(t, a.do("LOCK", "k", "5000", "OWNER", "alice"))
	if !strings.HasPrefix(tok, "owner:") {
		t.Fatalf("owner token %q", tok)
	}
	for _, c := range []*fixture{a, b} { // reentry through either proxy
		if got, _ := lockReply(t, c.do("LOCK", "k", "5000", "owner", "alice")); got != tok {
			t.Fatalf("reentry token %q, want %q", got, tok)
		}
	}
	steps := []struct {
		f    *fixture
		cmd  []string
		want string
	}{
		{b, []string{"LOCK", "k", "5000", "OWNER", "bob"}, "nil"},
		{b, []string{"LOCK", "k", "5000", "OWNER", "alic"}, "nil"},
		{b, []string{"LOCK", "k", "5000"}, "nil"},
		{b, []string{"UNLOCK", "k", tok}, ":1"}, // 3 holds -> 2
		{a, []string{"GET", "k"}, "$" + tok},
		{a, []string{"UNLOCK", "k", tok}, ":1"}, // -> 1
		{b, []string{"LOCK", "k", "5000", "OWNER", "bob"}, "nil"},
		{a, []string{"UNLOCK", "k", tok}, ":1"}, // -> 0: free
		{b, []string{"GET", "k"}, "nil"},
		{a, []string{"UNLOCK", "k", tok}, ":0"},
	}
	for _, st := range steps {
		if got := st.f.do(st.cmd...); got != st.want {
			t.Fatalf("%v = %q, want %q", st.cmd, got, st.want)
		}
	}
	if got, _ := lockReply(t, b.do("LOCK", "k", "5000", "OWNER", "bob")); !strings.HasPrefix(got, quorum.OwnerPrefix("bob")) {
		t.Fatalf("bob's token %q", got)
	}
}

func TestOwnerWithKeepalive(t *testing.T) {
	h := redisHandler(t, redistest.StartN(t, 3), Options{})
	warmUp(t, h, "k")
	holder, obs := client(t, h), client(t, h)
	// 1s: a renewal has two thirds of it to get through, on a loaded
	// machine too.
	const ttl = time.Second
	tok, _ := lockReply(t, holder.do("LOCK", "k", "1000", "OWNER", "w1", "KEEPALIVE"))
	if got, _ := lockReply(t, holder.do("LOCK", "k", "1000", "KEEPALIVE", "OWNER", "w1")); got != tok {
		t.Fatalf("reentry token %q, want %q", got, tok)
	}
	// Past the ttl, both the lock and its hold count must have been renewed.
	holdFor(t, obs, "k", tok, 5*ttl/2)
	if got := holder.do("UNLOCK", "k", tok); got != ":1" {
		t.Fatalf("first UNLOCK = %q", got)
	}
	holdFor(t, obs, "k", tok, 3*ttl/2) // one hold left: still kept
	if got := holder.do("UNLOCK", "k", tok); got != ":1" {
		t.Fatalf("second UNLOCK = %q", got)
	}
	if got := obs.do("GET", "k"); got != "nil" {
		t.Fatalf("GET after the last hold = %q", got)
	}
	if got := infoField(t, obs, "keepalive_held"); got != "0" {
		t.Fatalf("keepalive_held = %s", got)
	}
	if got := infoField(t, obs, "keepalive_lost"); got != "0" {
		t.Fatalf("keepalive_lost = %s", got)
	}
}

func TestFenceStrictlyIncreasing(t *testing.T) {
	servers := redistest.StartN(t, 3)
	// A frozen clock takes the wall-clock floor out of play, so that only
	// the counters on the backends can make the fences increase.
	frozen := time.Now()
	stop := func(c *quorum.Config) { c.Now = func() time.Time { return frozen } }
	proxies := []*fixture{
		client(t, redisHandlerCfg(t, servers, Options{}, stop)),
		client(t, redisHandlerCfg(t, servers, Options{}, stop)),
	}
	var last int64
	const rounds = 300
	for i := range rounds {
		if i == rounds/2 {
			servers[0].Restart(t) // comes back empty
			n, err := servers[0].Client().Exists(context.Background(), quorum.FenceKey("k")).Result()
			if err != nil || n != 0 {
				t.Fatalf("restarted server still has the counter: %d, %v", n, err)
			}
		}
		f := proxies[i%2]
		tok, rest := lockReply(t, f.do("LOCK", "k", "2000", "FENCE"))
		if len(rest) != 2 {
			t.Fatalf("LOCK FENCE reply has no fence: %v", rest)
		}
		if rest[1] <= last {
			t.Fatalf("round %d: fence %d not above %d", i, rest[1], last)
		}
		last = rest[1]
		if got := f.do("UNLOCK", "k", tok); got != ":1" {
			t.Fatalf("UNLOCK = %q", got)
		}
	}
}
