package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// SET key new [PX ms] IFEQ old over three real redis-servers and two
// proxies in front of them.

// backendTokens is what each server holds at key ("" for nothing).
func backendTokens(t *testing.T, servers []*redistest.Server, key string) []string {
	t.Helper()
	var got []string
	for i, s := range servers {
		v, err := s.Client().Get(context.Background(), key).Result()
		if err != nil && err.Error() != "redis: nil" {
			t.Fatalf("GET %s on backend %d: %v", key, i, err)
		}
		got = append(got, v)
	}
	return got
}

// TestHandOverRedis: through one proxy the lock passes from old to new;
// the other proxy then sees new, the old token's UNLOCK gets 0, every
// backend holds new with the ttl given, and a hand-over from a token that
// does not hold the key is null (contention), never an error.
func TestHandOverRedis(t *testing.T) {
	servers := redistest.StartN(t, 3)
	a := client(t, redisHandler(t, servers, Options{}))
	b := client(t, redisHandler(t, servers, Options{}))
	steps := []struct {
		f    *fixture
		call []string
		want string
	}{
		{a, []string{"SET", "k", "old", "NX", "PX", "30000"}, "+OK"},
		{a, []string{"SET", "k", "new", "PX", "5000", "IFEQ", "old"}, "+OK"},
		{b, []string{"GET", "k"}, "$new"},
		{b, []string{"UNLOCK", "k", "old"}, ":0"},
		{b, []string{"SET", "k", "third", "PX", "5000", "IFEQ", "old"}, "nil"},
		{a, []string{"SET", "absent", "new", "PX", "5000", "IFEQ", "old"}, "nil"},
		{b, []string{"GET", "k"}, "$new"},
	}
	for n, st := range steps {
		if got := st.f.do(st.call...); got != st.want {
			t.Fatalf("%s = %q, want %q", strings.Join(st.call, " "), got, st.want)
		}
		if n == 1 {
			// The hand-over answers once a majority swapped; the last
			// backend's swap is still on its way, and the other proxy's
			// UNLOCK (another connection) could overtake it there.
			waitHeldEverywhere(t, servers, "k", "new")
		}
	}
	for i, tok := range backendTokens(t, servers, "k") {
		if tok != "new" {
			t.Errorf("backend %d holds %q, want new", i, tok)
		}
		if d := servers[i].Client().PTTL(context.Background(), "k").Val(); d <= 0 || d > 5*time.Second {
			t.Errorf("backend %d: pttl %v, want the hand-over's 5 s", i, d)
		}
	}
	if got := b.do("UNLOCK", "k", "new"); got != ":1" {
		t.Fatalf("UNLOCK k new = %q, want :1", got)
	}
}

// TestHandOverRefusesOwnerTokens: an OWNER lock's token is neither handed
// over nor handed to; the lock stays as it was.
func TestHandOverRefusesOwnerTokens(t *testing.T) {
	servers := redistest.StartN(t, 3)
	f := client(t, redisHandler(t, servers, Options{}))
	tok, _ := lockReply(t, f.do("LOCK", "k", "10000", "OWNER", "me"))
	if !quorum.IsOwnerToken(tok) {
		t.Fatalf("LOCK … OWNER gave %q, not an owner token", tok)
	}
	for _, call := range [][]string{
		{"SET", "k", "plain", "PX", "5000", "IFEQ", tok},
		{"SET", "k", tok + "x", "PX", "5000", "IFEQ", tok},
	} {
		if got := f.do(call...); !strings.HasPrefix(got, "-ERR redlockd does not support this form of 'set': IFEQ does not hand over a lock of LOCK … OWNER") {
			t.Errorf("%s = %q, want the OWNER refusal", strings.Join(call, " "), got)
		}
	}
	f.do("SET", "j", "old", "NX", "PX", "5000")
	if got := f.do("SET", "j", tok, "PX", "5000", "IFEQ", "old"); !strings.Contains(got, "OWNER") {
		t.Errorf("a hand-over to an owner token = %q, want the OWNER refusal", got)
	}
	if got := f.do("GET", "k"); got != "$"+tok {
		t.Errorf("GET k = %q after the refusals, want the owner's token", got)
	}
}

// TestHandOverWithoutExpiry: without PX/EX the new token is a session
// lock of the connection that handed it over, as SET without an expiry
// is: PTTL -1, renewed on the backends, released when that connection
// closes. Another proxy sees it meanwhile.
func TestHandOverWithoutExpiry(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandler(t, servers, Options{SessionTTL: 1500 * time.Millisecond})
	f := client(t, h)
	obs := client(t, redisHandler(t, servers, Options{}))
	if got := f.do("SET", "k", "old", "NX", "PX", "30000"); got != "+OK" {
		t.Fatalf("SET NX = %q", got)
	}
	if got := f.do("SET", "k", "new", "IFEQ", "old"); got != "+OK" {
		t.Fatalf("SET k new IFEQ old = %q, want +OK", got)
	}
	if got := f.do("PTTL", "k"); got != ":-1" {
		t.Errorf("PTTL of the handed-over session lock = %q, want :-1", got)
	}
	renewals(t, servers[0], "k", 2)
	if got := obs.do("GET", "k"); got != "$new" {
		t.Fatalf("GET k through another proxy = %q, want $new", got)
	}
	h.CloseSession(f.s)
	deadline := time.Now().Add(5 * time.Second)
	for got := obs.do("GET", "k"); got != "nil"; got = obs.do("GET", "k") {
		if time.Now().After(deadline) {
			t.Fatalf("GET k = %q 5 s after the session closed, want nil", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHandOverOfKeptLock: handing over a KEEPALIVE lock ends its renewal
// without counting it lost, and the renewals of the old token never touch
// the new one.
func TestHandOverOfKeptLock(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{}, func(c *quorum.Config) { c.NodeTimeout = time.Second })
	f := client(t, h)
	keepLock(t, f, "ctl", "ctl-token")
	keepLock(t, f, "k", "old")
	if got := f.do("SET", "k", "new", "PX", "20000", "IFEQ", "old"); got != "+OK" {
		t.Fatalf("SET k new PX 20000 IFEQ old = %q", got)
	}
	if held := h.KeepaliveStats().Held; held != 1 {
		t.Errorf("%d kept locks after the hand-over, want 1 (the control lock)", held)
	}
	renewals(t, servers[0], "ctl", 5)
	if st := h.KeepaliveStats(); st.Lost != 0 {
		t.Errorf("KeepaliveStats = %+v: the handed-over lock counted as lost", st)
	}
	if got := f.do("GET", "k"); got != "$new" {
		t.Errorf("GET k = %q, want $new", got)
	}
	for i, s := range servers {
		if d := s.Client().PTTL(context.Background(), "k").Val(); d > 20*time.Second || d <= 0 {
			t.Errorf("backend %d: pttl %v, want at most the hand-over's 20 s", i, d)
		}
	}
}

// TestHandOverFailedRoundSwapsBack: a hand-over that wins no majority (one
// backend holds another token, one is stopped) is null, and the backend
// where it swapped holds the old token again; with two backends stopped
// it is NOQUORUM and changes nothing either.
func TestHandOverFailedRoundSwapsBack(t *testing.T) {
	servers := redistest.StartN(t, 3)
	f := client(t, redisHandler(t, servers, Options{}))
	if got := f.do("SET", "k", "old", "NX", "PX", "30000"); got != "+OK" {
		t.Fatalf("SET NX = %q", got)
	}
	if err := servers[1].Client().Set(context.Background(), "k", "other", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	servers[2].Stop()
	t.Cleanup(servers[2].Cont)
	if got := f.do("SET", "k", "new", "PX", "20000", "IFEQ", "old"); got != "nil" {
		t.Fatalf("a hand-over without a majority = %q, want nil", got)
	}
	if got := backendTokens(t, servers[:2], "k"); got[0] != "old" || got[1] != "other" {
		t.Fatalf("backends hold %q after the failed hand-over, want [old other]", got)
	}
	servers[1].Stop()
	t.Cleanup(servers[1].Cont)
	if got := f.do("SET", "k", "new", "PX", "20000", "IFEQ", "old"); !strings.HasPrefix(got, "-NOQUORUM 1 of 3 backends answered") {
		t.Fatalf("a hand-over with one backend answering = %q, want NOQUORUM", got)
	}
	if got := backendTokens(t, servers[:1], "k"); got[0] != "old" {
		t.Fatalf("backend 0 holds %q after the NOQUORUM hand-over, want old", got[0])
	}
	if d := servers[0].Client().PTTL(context.Background(), "k").Val(); d <= 0 {
		t.Fatalf("backend 0: pttl %v after the swap back, want an expiry", d)
	}
}

// waitHeldEverywhere waits (bounded) until every backend stores tok at key.
func waitHeldEverywhere(t *testing.T, servers []*redistest.Server, key, tok string) {
	t.Helper()
	for i := 0; ; i++ {
		all := true
		for _, got := range backendTokens(t, servers, key) {
			all = all && got == tok
		}
		if all {
			return
		}
		if i == 200 {
			t.Fatalf("%s is not %q on every backend: %v", key, tok, backendTokens(t, servers, key))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
