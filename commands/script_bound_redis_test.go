package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestReplicatedScriptOnKeptLocks: a replicated script that releases a
// KEEPALIVE lock or a session lock of this proxy ends its renewal as
// UNLOCK does: no loss is counted and no renewal puts the key back. A
// script that leaves a kept lock as it was (another client's release with
// the wrong token, a refresh by the holder) does not stop its renewal: the
// lock would expire under its holder. A control lock shows time went by.
func TestReplicatedScriptOnKeptLocks(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{}, func(c *quorum.Config) {
		c.NodeTimeout = time.Second
		c.SessionTTL = 1500 * time.Millisecond
	})
	f := client(t, h)
	keepLock(t, f, "ctl", "ctl-token")
	keepLock(t, f, "kept", "tok")
	keepLock(t, f, "other", "mine")
	keepLock(t, f, "fresh", "tok")
	if got := f.do("SET", "session", "tok"); got != "+OK" {
		t.Fatalf("SET session tok (a session lock) = %s", got)
	}
	if st := h.KeepaliveStats(); st.Held != 5 {
		t.Fatalf("KeepaliveStats = %+v, want 5 held", st)
	}
	for _, key := range []string{"kept", "session"} {
		if got := f.do(eval(semaphoreRelease, k1(key), "tok")...); got != ":1" {
			t.Fatalf("release of %s by script = %s", key, got)
		}
	}
	if got := f.do(eval(semaphoreRelease, k1("other"), "wrong")...); got != ":0" {
		t.Fatalf("release of other with a wrong token = %s", got)
	}
	if got := f.do(eval(semaphoreRefresh, k1("fresh"), "tok", keptTTL)...); got != ":1" {
		t.Fatalf("refresh of fresh by script = %s", got)
	}
	renewals(t, servers[0], "ctl", 5)
	renewals(t, servers[0], "other", 1)
	renewals(t, servers[0], "fresh", 1)
	if st := h.KeepaliveStats(); st.Lost != 0 || st.Held != 3 {
		t.Errorf("KeepaliveStats = %+v, want 3 held (ctl, other, fresh) and none lost", st)
	}
	for _, key := range []string{"kept", "session"} {
		for i, s := range servers {
			if n, err := s.Client().Exists(context.Background(), key).Result(); err != nil || n != 0 {
				t.Errorf("backend %d holds %s after its release by script: %d, %v", i, key, n, err)
			}
		}
	}
}

// TestReplicatedScriptSelectWakesWaiter: a script that SELECTs another
// database than its connection's (by ARGV) releases the lock of that
// database on every backend, leaves the same key of the connection's
// database alone, and wakes a LOCK … WAIT of that database. The waiters'
// own retries are spaced past their wait, so only the wake can serve it.
func TestReplicatedScriptSelectWakesWaiter(t *testing.T) {
	t.Run("one proxy", func(t *testing.T) { testScriptWakes(t, false) })
	t.Run("two proxies", func(t *testing.T) { testScriptWakes(t, true) })
}

// testScriptWakes: the waiter is on a second proxy in front of the same
// backends when two is set.
func testScriptWakes(t *testing.T, two bool) {
	servers := redistest.StartN(t, 3)
	slow := func(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = time.Minute, time.Minute }
	h := redisHandlerCfg(t, servers, Options{}, slow)
	hw := h
	if two {
		hw = redisHandlerCfg(t, servers, Options{}, slow)
	}
	in3, waiter, f := client(t, h), client(t, hw), client(t, h)
	for _, c := range []*fixture{in3, waiter} {
		if got := c.do("SELECT", "3"); got != "+OK" {
			t.Fatalf("SELECT 3 = %s", got)
		}
	}
	lockReply(t, in3.do("LOCK", "k", "60000", "TOKEN", "tok"))
	lockReply(t, f.do("LOCK", "k", "60000", "TOKEN", "tok"))
	got := make(chan string, 1)
	go func() { got <- waiter.do("LOCK", "k", "60000", "WAIT", "20000") }()
	for i := 0; hw.cluster.DB(3).Waiters("k") == 0; i++ {
		if i == 2000 {
			t.Fatal("the waiter never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	release := `redis.call('select', tonumber(ARGV[2]))
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`
	if r := f.do(eval(release, k1("k"), "tok", "3")...); r != ":1" {
		t.Fatalf("release in db 3 by a script run from db 0 = %s", r)
	}
	// The first backend's release wakes the waiter: a backend that the
	// script reached after the waiter's round may lack its token.
	wtok, _ := lockReply(t, <-got)
	held := 0
	for i, s := range servers {
		c := s.Client()
		if v, _ := c.Get(context.Background(), "k").Result(); v != "tok" {
			t.Errorf("backend %d db 0 holds %q; want tok, untouched", i, v)
		}
		if v, _ := c.Do(context.Background(), "EVAL", "redis.call('select', 3) return redis.call('get', KEYS[1])", 1, "k").Text(); v == wtok {
			held++
		}
	}
	if held < 2 {
		t.Errorf("%d backends hold the waiter's token in db 3; want a majority", held)
	}
}

// TestReplicatedScriptOnOwnerToken: a writing replicated script given an
// OWNER lock's token is refused and changes nothing. Run on the backends,
// a refresh would extend the lock but not its hold count, which would
// expire first: one UNLOCK would then free a lock that a second hold
// still keeps; a release would free every hold at once. A read-only
// script may read it.
func TestReplicatedScriptOnOwnerToken(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	tok, _ := lockReply(t, f.do("LOCK", "k", "10000", "OWNER", "me"))
	lockReply(t, f.do("LOCK", "k", "10000", "OWNER", "me"))
	for _, call := range [][]string{
		eval(semaphoreRefresh, k1("k"), tok, "60000"),
		eval(semaphoreRelease, k1("k"), tok),
	} {
		if got := f.do(call...); !strings.HasPrefix(got, "-ERR redlockd does not support this form of 'eval'") {
			t.Errorf("%s = %q, want a refusal", shortCall(call), got)
		}
	}
	if got := f.do("EVAL_RO", "return redis.call('get', KEYS[1]) == ARGV[1]", "1", "k", tok); got != ":1" {
		t.Errorf("read-only script over the owner's token = %q, want :1", got)
	}
	for i, s := range servers {
		if p, err := s.Client().PTTL(context.Background(), "k").Result(); err != nil || p > 10*time.Second {
			t.Errorf("backend %d: ttl of k %v, %v; want the lock's own, at most 10s", i, p, err)
		}
	}
	// Both holds are still counted: the first UNLOCK leaves the lock held.
	if got := f.do("UNLOCK", "k", tok); got != ":1" {
		t.Fatalf("first UNLOCK = %s", got)
	}
	if got := f.do("GET", "k"); got != "$"+tok {
		t.Errorf("GET after one of two holds was dropped = %s, want the owner's token", got)
	}
}
