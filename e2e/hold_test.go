package e2e

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// doer is a go-redis client or a single connection of one.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// soleClient is a RESP2 client of in over a single connection, so that
// a lock bound to the connection is bound to the client, and Close hangs
// up.
func soleClient(t *testing.T, in *redlocktest.Instance) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, PoolSize: 1, MaxIdleConns: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// holdsOn reads the hold count each backend stores for key's owner lock
// of token: 0 when the lock is not there, 1 when no count is stored.
func holdsOn(t *testing.T, in *redlocktest.Instance, key, token string) []int {
	t.Helper()
	out := make([]int, len(in.Backends))
	for i, s := range in.Backends {
		if s.Client().Get(ctxT(t), key).Val() != token {
			continue
		}
		out[i] = 1
		h := s.Client().Get(ctxT(t), quorum.HoldsKey(key)).Val()
		if j := strings.LastIndexByte(h, ' '); j > 0 && h[:j] == token {
			out[i], _ = strconv.Atoi(h[j+1:])
		}
	}
	return out
}

// waitHolds polls until every backend stores n holds of key's lock.
func waitHolds(t *testing.T, in *redlocktest.Instance, key, token string, n int) {
	t.Helper()
	var got []int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if got = holdsOn(t, in, key, token); allEqual(got, n) {
			return
		}
	}
	t.Fatalf("the backends hold %v of %s, want %d on each", got, key, n)
}

func allEqual(got []int, want int) bool {
	for _, n := range got {
		if n != want {
			return false
		}
	}
	return true
}

// wantNull fails unless the command through c answers null.
func wantNull(t *testing.T, c doer, what string, args ...any) {
	t.Helper()
	res, err := c.Do(ctxT(t), args...).Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("%s: %v %v = %v, %v; want null", what, args[0], args[1:], res, err)
	}
}

// TestHangUpDropsOnlyOwnHolds: A holds an owner lock with KEEPALIVE, B
// (on another proxy) takes a second hold of the same owner without it. A
// hangs up (or sends RESET): only A's hold goes; the lock stays B's for
// B's validity, and B's RENEW and UNLOCK work.
func TestHangUpDropsOnlyOwnHolds(t *testing.T) {
	t.Run("hang-up", func(t *testing.T) {
		dropOwnHolds(t, func(a *redis.Client) { a.Close() })
	})
	t.Run("RESET", func(t *testing.T) {
		dropOwnHolds(t, func(a *redis.Client) {
			if err := a.Do(ctxT(t), "RESET").Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func dropOwnHolds(t *testing.T, end func(a *redis.Client)) {
	p1 := redlocktest.Start(t, redlocktest.Options{})
	p2 := redlocktest.StartOver(t, p1.Backends, redlocktest.Options{})
	a := soleClient(t, p1)
	b := p2.Client(t, 2)
	tok, _ := lock(t, a, "k", 10000, "OWNER", "w", "KEEPALIVE")
	// LOCK answers once a majority granted: the reentry must find the
	// lock on every backend, or a late SET would store it there uncounted.
	waitHolds(t, p1, "k", tok, 1)
	tokB, _ := lock(t, b, "k", 10000, "OWNER", "w")
	if tokB != tok {
		t.Fatalf("B's reentry got token %q, want A's %q", tokB, tok)
	}
	waitHolds(t, p1, "k", tok, 2)
	end(a)
	pollFor(t, "A's end handled", func() bool {
		return p1.Handler.KeepaliveStats().Held == 0
	})
	if got := holdsOn(t, p1, "k", tok); !allEqual(got, 1) {
		t.Fatalf("after A's end the backends hold %v, want B's one hold on each", got)
	}
	wantNull(t, p1.Client(t, 2), "another owner while B holds", "LOCK", "k", 10000, "OWNER", "other")
	wantNull(t, p2.Client(t, 2), "another owner on B's proxy", "LOCK", "k", 10000, "OWNER", "other")
	if v, err := b.Do(ctxT(t), "RENEW", "k", tok, 10000).Int64(); err != nil || v <= 0 {
		t.Fatalf("B's RENEW = %d, %v; want a validity", v, err)
	}
	if n, err := b.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
		t.Fatalf("B's UNLOCK = %d, %v; want 1", n, err)
	}
	lock(t, p1.Client(t, 2), "k", 10000, "OWNER", "other")
}

// TestUnlockStopsOwnShareOfRenewal: A's UNLOCK of its kept hold stops
// the renewal its KEEPALIVE started, although B's hold (not kept) is
// still there: the lock then lives by B's ttl alone.
func TestUnlockStopsOwnShareOfRenewal(t *testing.T) {
	p1 := redlocktest.Start(t, redlocktest.Options{})
	p2 := redlocktest.StartOver(t, p1.Backends, redlocktest.Options{})
	a := soleClient(t, p1)
	b := p2.Client(t, 2)
	tok, _ := lock(t, a, "k", 900, "OWNER", "w", "KEEPALIVE")
	waitHolds(t, p1, "k", tok, 1)
	lock(t, b, "k", 900, "OWNER", "w")
	if n, err := a.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
		t.Fatalf("A's UNLOCK = %d, %v; want 1", n, err)
	}
	if n := p1.Handler.KeepaliveStats().Held; n != 0 {
		t.Fatalf("after A's UNLOCK its proxy still renews %d lock(s)", n)
	}
	// Nobody renews B's hold: the lock expires by its ttl although A's
	// connection is still open.
	pollFor(t, "the lock expires on every backend", func() bool { return allEqual(holdsOn(t, p1, "k", tok), 0) })
	if err := a.Ping(ctxT(t)).Err(); err != nil {
		t.Fatalf("A's connection: %v", err)
	}
}

// TestTwoKeptHoldsOneClosed: two connections of one proxy each keep a
// hold of the same owner lock; closing one drops its hold and the other's
// renewal goes on, beyond the ttl.
func TestTwoKeptHoldsOneClosed(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	a1, a2 := soleClient(t, in), soleClient(t, in)
	const ttl = 600 * time.Millisecond
	tok, _ := lock(t, a1, "k", ttl.Milliseconds(), "OWNER", "w", "KEEPALIVE")
	waitHolds(t, in, "k", tok, 1)
	lock(t, a2, "k", ttl.Milliseconds(), "OWNER", "w", "KEEPALIVE")
	waitHolds(t, in, "k", tok, 2)
	a1.Close()
	waitHolds(t, in, "k", tok, 1) // a1's hold dropped, a2's kept
	other := in.Client(t, 2)
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); {
		if v, err := a2.Get(ctxT(t), "k").Result(); v != tok || err != nil {
			t.Fatalf("a2's kept lock: GET = %q, %v; want its token", v, err)
		}
		wantNull(t, other, "another owner while a2 keeps its hold", "LOCK", "k", 1000, "OWNER", "other")
		time.Sleep(50 * time.Millisecond) // pacing the checks over three ttls
	}
	if n, err := a2.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
		t.Fatalf("a2's UNLOCK = %d, %v; want 1", n, err)
	}
	if n := in.Handler.KeepaliveStats().Held; n != 0 {
		t.Fatalf("after the last UNLOCK %d lock(s) still renewed", n)
	}
}

// restartOptions: quarantine and max ttl of 2s, as with --max-ttl 2s.
func restartOptions() redlocktest.Options {
	return redlocktest.Options{
		Commands: commands.Options{MaxTTL: 2 * time.Second, SessionTTL: 1500 * time.Millisecond},
		Quorum:   func(c *quorum.Config) { c.RestartQuarantine = 2 * time.Second },
	}
}

// TestKeptLockSurvivesRollingRestart: the backends restart empty one at a
// time, each waiting out its quarantine; a KEEPALIVE lock and a session
// lock stay held throughout, are put back on each restarted backend, and
// no other client is granted them.
func TestKeptLockSurvivesRollingRestart(t *testing.T) {
	take := map[string]func(t *testing.T, in *redlocktest.Instance, c *redis.Client) string{
		"KEEPALIVE": func(t *testing.T, in *redlocktest.Instance, c *redis.Client) string {
			tok, _ := lock(t, c, "k", 1500, "KEEPALIVE")
			return tok
		},
		// Two holds of an owner lock: each restored backend gets the count.
		"OWNER KEEPALIVE": func(t *testing.T, in *redlocktest.Instance, c *redis.Client) string {
			tok, _ := lock(t, c, "k", 1500, "OWNER", "w", "KEEPALIVE")
			pollFor(t, "the lock on every backend", func() bool { return holdOn(t, in.Backends, "k", tok) == 3 })
			lock(t, c, "k", 1500, "OWNER", "w", "KEEPALIVE")
			return tok
		},
		"session": func(t *testing.T, in *redlocktest.Instance, c *redis.Client) string {
			if err := c.Do(ctxT(t), "SET", "k", "session-token", "NX").Err(); err != nil {
				t.Fatal(err)
			}
			return "session-token"
		},
	}
	for name, takeLock := range take {
		t.Run(name, func(t *testing.T) {
			in := redlocktest.Start(t, restartOptions())
			a := soleClient(t, in)
			other := in.Client(t, 2)
			pollFor(t, "every backend watched", func() bool {
				for _, s := range in.Cluster.NodeStates() {
					if s.RunID == "" {
						return false
					}
				}
				return true
			})
			tok := takeLock(t, in, a)
			for i, s := range in.Backends {
				old := in.Cluster.NodeStates()[i].RunID
				s.Restart(t)
				pollFor(t, "the restart seen", func() bool { return in.Cluster.NodeStates()[i].RunID != old })
				wantNull(t, other, "another client during the restart", "LOCK", "k", 1000)
				pollFor(t, "the lock restored on the restarted backend", func() bool {
					st := in.Cluster.NodeStates()[i]
					return !st.Quarantined && s.Client().Get(ctxT(t), "k").Val() == tok
				})
				wantNull(t, other, "another client after the restart", "LOCK", "k", 1000)
				if v := a.Get(ctxT(t), "k").Val(); v != tok {
					t.Fatalf("after restarting backend %d the holder's GET = %q, want its token", i, v)
				}
			}
			if n := in.Handler.KeepaliveStats().Lost; n != 0 {
				t.Fatalf("%d kept lock(s) counted lost", n)
			}
			if name == "OWNER KEEPALIVE" {
				waitHolds(t, in, "k", tok, 2)
				if n, err := a.Do(ctxT(t), "UNLOCK", "k", tok).Int(); n != 1 || err != nil {
					t.Fatalf("UNLOCK = %d, %v; want 1", n, err)
				}
				wantNull(t, other, "another owner while one hold remains", "LOCK", "k", 1000, "OWNER", "other")
			}
		})
	}
}

// TestLostKeptLockIsReported: a kept lock whose backends all lose it is
// lost once its validity runs out: a RESP3 holder gets a push naming the
// key, RENEW answers null and INFO counts it.
func TestLostKeptLockIsReported(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	rc := resptest.Dial(t, in.Addr)
	if l := rc.Line("HELLO", "3"); !strings.HasPrefix(l, "%") {
		t.Fatalf("HELLO 3 = %q", l)
	}
	for range 7 * 2 { // HELLO's map: seven fields, each a key and a value
		readReply(t, rc)
	}
	rc.Send("LOCK", "lost", "900", "KEEPALIVE")
	reply := readReply(t, rc)
	if len(reply) != 3 {
		t.Fatalf("LOCK reply %v", reply)
	}
	tok := reply[1]
	for _, s := range in.Backends {
		if err := s.Client().Del(ctxT(t), "lost").Err(); err != nil {
			t.Fatal(err)
		}
	}
	push := readPush(t, rc)
	want := []string{">3", "redlockd", "lock-lost", "lost"}
	if strings.Join(push, " ") != strings.Join(want, " ") {
		t.Fatalf("after the loss the connection read %q, want the push %q", push, want)
	}
	// A copy put back on a majority (as a backend might still hold one)
	// does not make the lost lock held again.
	for _, s := range in.Backends {
		if err := s.Client().Set(ctxT(t), "lost", tok, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range [][]string{{"RENEW", "lost", tok, "900"}, {"GET", "lost"}} {
		rc.Send(cmd...)
		if r := readReply(t, rc); len(r) != 1 || r[0] != "_" {
			t.Fatalf("%v on the lost lock = %v, want null", cmd, r)
		}
	}
	// Every read of its holder agrees with GET: the key is not held.
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"PTTL", "lost"}, ":-2"},
		{[]string{"TTL", "lost"}, ":-2"},
		{[]string{"EXISTS", "lost"}, ":0"},
	} {
		rc.Send(c.cmd...)
		if r := readReply(t, rc); len(r) != 1 || r[0] != c.want {
			t.Fatalf("%v on the lost lock = %v, want %s", c.cmd, r, c.want)
		}
	}
	rc.Send("UNLOCK", "lost", tok)
	if r := readReply(t, rc); len(r) != 1 || r[0] != ":0" {
		t.Fatalf("UNLOCK of the lost lock = %v, want 0", r)
	}
	if n := in.Handler.KeepaliveStats().Lost; n != 1 {
		t.Fatalf("keepalive_lost = %d, want 1", n)
	}
}

// readPush reads a RESP3 push message of bulk strings: its header line,
// then each element.
func readPush(t *testing.T, rc *resptest.Conn) []string {
	t.Helper()
	head := readReply(t, rc)
	n, err := strconv.Atoi(strings.TrimPrefix(head[0], ">"))
	if !strings.HasPrefix(head[0], ">") || err != nil {
		t.Fatalf("read %v, want a push message", head)
	}
	out := head
	for range n {
		out = append(out, readReply(t, rc)...)
	}
	return out
}

// TestLostKeptLockNoPushOnRESP2: a RESP2 connection has no out-of-band
// messages, so a lost kept lock sends it nothing; the next reply it reads
// is its own RENEW's null.
func TestLostKeptLockNoPushOnRESP2(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	rc := resptest.Dial(t, in.Addr)
	rc.Send("LOCK", "lost2", "900", "KEEPALIVE")
	reply := readReply(t, rc)
	if len(reply) != 3 {
		t.Fatalf("LOCK reply %v", reply)
	}
	tok := reply[1]
	for _, s := range in.Backends {
		if err := s.Client().Del(ctxT(t), "lost2").Err(); err != nil {
			t.Fatal(err)
		}
	}
	pollFor(t, "the kept lock counted lost", func() bool { return in.Handler.KeepaliveStats().Lost == 1 })
	rc.Send("RENEW", "lost2", tok, "900")
	if r := readReply(t, rc); len(r) != 1 || r[0] != "$-1" {
		t.Fatalf("first reply after the loss = %v, want RENEW's null (no push on RESP2)", r)
	}
}
