package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Lock scripts whose reply says "acquired" in their own words: the
// proxy cannot read it, only what each backend's run changed.
const (
	acquireZeroOrPTTL = `if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return 0 end return redis.call('pttl',KEYS[1])`
	acquireWords      = `if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return 'ACQUIRED' end return 'BUSY'`
)

// TestScriptGrantOfAMinority: X holds a lock through p1; one backend
// lost it (deleted there directly) and another is stopped. Y's acquire
// by script through p2 is granted by the first backend alone: whatever
// the script answers there, Y must not be told it acquired, and what it
// wrote there is undone before Y is answered. Redisson's hash lock in
// the same setup is refused and undone too.
func TestScriptGrantOfAMinority(t *testing.T) {
	servers := redistest.StartN(t, 3)
	tune := func(c *quorum.Config) { c.ReleaseRetry = 20 * time.Millisecond }
	p1 := client(t, redisHandlerCfg(t, servers, Options{}, tune))
	p2 := client(t, redisHandlerCfg(t, servers, Options{}, tune))
	keys := []string{"res", "words", "hash"}
	warmUp(t, p1.h, keys...)
	warmUp(t, p2.h, keys...)
	ctx := context.Background()
	for _, k := range keys[:2] {
		lockReply(t, p1.do("LOCK", k, "30000"))
	}
	if got := p1.do(eval(hashAcquire, k1("hash"), "30000", "X:1")...); got != "nil" {
		t.Fatalf("X's hash lock = %s", got)
	}
	for _, k := range keys {
		if err := servers[0].Client().Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	servers[2].Stop()
	stopped := true
	defer func() {
		if stopped {
			servers[2].Cont()
		}
	}()
	calls := []struct {
		key  string
		call []string
		ours func(*redistest.Server) bool // the backend holds Y's write
	}{
		{"res", eval(acquireZeroOrPTTL, k1("res"), "tokY", "30000"), func(s *redistest.Server) bool {
			v, _ := s.Client().Get(ctx, "res").Result()
			return v == "tokY"
		}},
		{"words", eval(acquireWords, k1("words"), "tokY", "30000"), func(s *redistest.Server) bool {
			v, _ := s.Client().Get(ctx, "words").Result()
			return v == "tokY"
		}},
		{"hash", eval(hashAcquire, k1("hash"), "30000", "Y:1"), func(s *redistest.Server) bool {
			n, _ := s.Client().HExists(ctx, "hash", "Y:1").Result()
			return n
		}},
	}
	for _, c := range calls {
		got := p2.do(c.call...)
		if !strings.HasPrefix(got, "-NOQUORUM ") {
			t.Errorf("Y's acquire of %s by script through p2 = %s; want NOQUORUM (one backend of three granted)", c.key, got)
		}
		if c.ours(servers[0]) {
			t.Errorf("backend 0 still holds Y's write on %s after the round", c.key)
		}
		if c.ours(servers[1]) {
			t.Errorf("backend 1 holds Y's write on %s", c.key)
		}
	}
	servers[2].Cont()
	stopped = false
	// The stopped backend ran Y's scripts once it resumed (X held the
	// keys there, so they refused); nothing of Y's stays anywhere.
	for _, c := range calls {
		eventually(t, 10*time.Second, "no backend holds Y's write on "+c.key, func() bool {
			return !c.ours(servers[0]) && !c.ours(servers[1]) && !c.ours(servers[2])
		})
	}
	// X still holds its locks on the majority that had them.
	for _, k := range keys[:2] {
		for _, i := range []int{1, 2} {
			if v, _ := servers[i].Client().Get(ctx, k).Result(); v == "" || v == "tokY" {
				t.Errorf("backend %d: %s = %q; want X's token", i, k, v)
			}
		}
	}
}

// TestScriptGrantOfAMajority: the same scripts where a majority granted
// answer the grant, and the backend that refused keeps what it had.
func TestScriptGrantOfAMajority(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	ctx := context.Background()
	holdOn(t, servers[:1], "res", "theirs", time.Minute)
	holdOn(t, servers[:1], "words", "theirs", time.Minute)
	if got := f.do(eval(acquireZeroOrPTTL, k1("res"), "tokY", "30000")...); got != ":0" {
		t.Fatalf("acquire granted by two of three = %s; want the script's grant, 0", got)
	}
	if got := f.do(eval(acquireWords, k1("words"), "tokY", "30000")...); got != "$ACQUIRED" {
		t.Fatalf("acquire granted by two of three = %s; want ACQUIRED", got)
	}
	for _, k := range []string{"res", "words"} {
		if vals := valuesOf(servers, k); vals[0] != "theirs" || vals[1] != "tokY" || vals[2] != "tokY" {
			t.Fatalf("%s: backends hold %q", k, vals)
		}
	}
	// Refused by a majority: the refusal's reply, the one grant undone.
	holdOn(t, servers[:2], "busy", "theirs", time.Minute)
	if got := f.do(eval(acquireWords, k1("busy"), "tokY", "30000")...); got != "$BUSY" {
		t.Fatalf("acquire refused by two of three = %s; want BUSY", got)
	}
	if v, _ := servers[2].Client().Get(ctx, "busy").Result(); v != "" {
		t.Fatalf("the backend that granted against the majority holds %q", v)
	}
}

// markKeys counts the undo records on srv.
func markKeys(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	keys, err := srv.Client().Keys(context.Background(), "redlockd:script:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestScriptRecordsDoNotPileUp: Redisson-style lock and unlock cycles by
// script, on one key and on many, leave no undo record and no other key
// behind on any backend once they are decided.
func TestScriptRecordsDoNotPileUp(t *testing.T) {
	servers, h, f := scriptStack(t, nil)
	ctx := context.Background()
	const spread = 50
	for i := range spread {
		warmUp(t, h, fmt.Sprint("many", i))
	}
	warmUp(t, h, "warm", "one")
	cycle := func(key string) {
		t.Helper()
		if got := f.do(eval(hashAcquire, k1(key), "30000", "id:1")...); got != "nil" {
			t.Fatalf("lock of %s = %s", key, got)
		}
		if got := f.do(eval(hashRelease, k1(key), "id:1")...); got != ":1" {
			t.Fatalf("unlock of %s = %s", key, got)
		}
	}
	cycle("warm")
	before := make([]int64, len(servers))
	for i, s := range servers {
		before[i] = s.Client().DBSize(ctx).Val()
	}
	const cycles = 1000
	for i := range cycles {
		cycle("one")
		cycle(fmt.Sprint("many", i%spread))
	}
	for i, s := range servers {
		eventually(t, 10*time.Second, fmt.Sprintf("backend %d holds no undo record", i), func() bool {
			return markKeys(t, s) == 0
		})
		if n := s.Client().DBSize(ctx).Val(); n != before[i] {
			keys, _ := s.Client().Keys(ctx, "*").Result()
			t.Errorf("backend %d: %d keys after %d cycles, %d before: %v", i, n, 2*cycles, before[i], keys)
		}
	}
}

// TestScriptFailedRoundRecordLife: the record of a round that did not
// stand lives no longer than what the script wrote, plus a margin, not
// the max-ttl; once undone, it is the short "undone" mark.
func TestScriptFailedRoundRecordLife(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	ctx := context.Background()
	holdOn(t, servers[:2], "k", "theirs", time.Minute)
	if got := f.do(eval(setNXScript, k1("k"), "mine", "3000")...); got != ":0" {
		t.Fatalf("acquire refused by two of three = %s", got)
	}
	keys, _ := servers[2].Client().Keys(ctx, "redlockd:script:*").Result()
	if len(keys) != 1 {
		t.Fatalf("backend 2's records: %v; want the undone mark", keys)
	}
	if p := servers[2].Client().PTTL(ctx, keys[0]).Val(); p <= 0 || p > 3*time.Second+evalMarkSlackForTest {
		t.Fatalf("the undone mark lives %v; want at most the script's 3s plus the margin", p)
	}
	for i := range 2 {
		keys, _ := servers[i].Client().Keys(ctx, "redlockd:script:*").Result()
		for _, k := range keys {
			if p := servers[i].Client().PTTL(ctx, k).Val(); p > evalMarkSlackForTest {
				t.Fatalf("backend %d, which changed nothing, keeps %s for %v", i, k, p)
			}
		}
	}
}

// evalMarkSlackForTest is the backend's margin on a record's life.
const evalMarkSlackForTest = 2 * time.Second

// TestScriptTTLAboveMaxTTL: with a max-ttl of 5s, a script that sets a
// 60s expiry, by any command that sets one, gets SET's error and leaves
// nothing on any backend: neither the key nor a record; a key it found
// keeps its value and expiry. A key the script leaves without an expiry
// gets the session ttl held to max-ttl.
func TestScriptTTLAboveMaxTTL(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{MaxTTL: 5 * time.Second}, func(c *quorum.Config) {
		c.MaxTTL = 5 * time.Second
		c.SessionTTL = 30 * time.Second
	})
	warmUp(t, h, "k")
	f := client(t, h)
	ctx := context.Background()
	at := time.Now().Add(60 * time.Second)
	pxat, exat := fmt.Sprint(at.UnixMilli()), fmt.Sprint(at.Unix())
	bodies := []struct {
		name, body string
		args       []string
	}{
		{"SET PX", `return redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2])`, []string{"t", "60000"}},
		{"SET EX", `return redis.call('set',KEYS[1],ARGV[1],'EX',ARGV[2])`, []string{"t", "60"}},
		{"SET PXAT", `return redis.call('set',KEYS[1],ARGV[1],'PXAT',ARGV[2])`, []string{"t", pxat}},
		{"SET EXAT", `return redis.call('set',KEYS[1],ARGV[1],'EXAT',ARGV[2])`, []string{"t", exat}},
		{"PSETEX", `return redis.call('psetex',KEYS[1],ARGV[2],ARGV[1])`, []string{"t", "60000"}},
		{"SET then PEXPIRE", `redis.call('set',KEYS[1],ARGV[1]) return redis.call('pexpire',KEYS[1],ARGV[2])`, []string{"t", "60000"}},
		{"SET then EXPIRE", `redis.call('set',KEYS[1],ARGV[1]) return redis.call('expire',KEYS[1],ARGV[2])`, []string{"t", "60"}},
		{"SET then PEXPIREAT", `redis.call('set',KEYS[1],ARGV[1]) return redis.call('pexpireat',KEYS[1],ARGV[2])`, []string{"t", pxat}},
		{"SET then EXPIREAT", `redis.call('set',KEYS[1],ARGV[1]) return redis.call('expireat',KEYS[1],ARGV[2])`, []string{"t", exat}},
		{"hash then PEXPIRE", `redis.call('hincrby',KEYS[1],ARGV[1],1) return redis.call('pexpire',KEYS[1],ARGV[2])`, []string{"t", "60000"}},
	}
	for _, b := range bodies {
		if got := f.do(eval(b.body, k1("k"), b.args...)...); got != "-ERR ttl exceeds max-ttl" {
			t.Errorf("%s of 60s by script = %s; want ERR ttl exceeds max-ttl", b.name, got)
		}
		for i, s := range servers {
			if keys, _ := s.Client().Keys(ctx, "*").Result(); len(keys) != 0 && !(len(keys) == 1 && keys[0] == quorum.HorizonKey) {
				t.Errorf("%s: backend %d holds %v", b.name, i, keys)
				s.Client().Del(ctx, "k")
			}
		}
	}
	// A key that was there keeps its value and its expiry.
	holdOn(t, servers, "k", "old", 3*time.Second)
	if got := f.do(eval(`return redis.call('pexpire',KEYS[1],ARGV[1])`, k1("k"), "60000")...); got != "-ERR ttl exceeds max-ttl" {
		t.Errorf("PEXPIRE of 60s by script = %s", got)
	}
	for i, s := range servers {
		if v, p := s.Client().Get(ctx, "k").Val(), s.Client().PTTL(ctx, "k").Val(); v != "old" || p <= 0 || p > 3*time.Second {
			t.Errorf("backend %d: k = %q, ttl %v after the refused script; want old within 3s", i, v, p)
		}
	}
	// Within max-ttl it runs; without an expiry, the session ttl is held
	// to max-ttl.
	if got := f.do(eval(`return redis.call('set',KEYS[1],ARGV[1],'PX',ARGV[2])`, k1("j"), "t", "5000")...); got != "+OK" {
		t.Errorf("SET PX 5000 by script = %s", got)
	}
	if got := f.do(eval(`return redis.call('set',KEYS[1],ARGV[1])`, k1("s"), "t")...); got != "+OK" {
		t.Errorf("SET without expiry by script = %s", got)
	}
	// The round needs a majority: a backend that answered past the node
	// timeout may not hold the key, but none holds it longer than max-ttl.
	held := 0
	for i, s := range servers {
		p, err := s.Client().PTTL(ctx, "s").Result()
		if err != nil {
			t.Fatalf("backend %d: PTTL s: %v", i, err)
		}
		if p == -2*time.Nanosecond { // go-redis passes PTTL's -2 (no key) through as -2ns
			continue
		}
		held++
		if p <= 0 || p > 5*time.Second {
			t.Errorf("backend %d: a key left without expiry has ttl %v; want at most max-ttl", i, p)
		}
	}
	if held < 2 {
		t.Errorf("the key the script set is on %d of 3 backends; want a majority", held)
	}
}

// TestScriptGivesSessionLockAnExpiry: a session lock (SET without an
// expiry, PTTL -1) that a script gives an expiry, as redis-semaphore's
// refresh does, is no session lock any more: PTTL answers the expiry.
// So do PEXPIRE and a SET with an expiry.
func TestScriptGivesSessionLockAnExpiry(t *testing.T) {
	servers, h, f := scriptStack(t, nil)
	warmUp(t, h, "a", "b", "c")
	for _, k := range []string{"a", "b", "c"} {
		if got := f.do("SET", k, "111"); got != "+OK" {
			t.Fatalf("SET %s 111 = %s", k, got)
		}
		if got := f.do("PTTL", k); got != ":-1" {
			t.Fatalf("PTTL of the session lock %s = %s", k, got)
		}
	}
	if got := f.do(eval(semaphoreRefresh, k1("a"), "111", "20000")...); got != ":1" {
		t.Fatalf("refresh by script = %s", got)
	}
	if got := f.do("PEXPIRE", "b", "20000"); got != ":1" {
		t.Fatalf("PEXPIRE = %s", got)
	}
	if got := f.do("SET", "c", "111", "PX", "20000"); got != "+OK" {
		t.Fatalf("SET PX = %s", got)
	}
	for _, k := range []string{"a", "b", "c"} {
		got := f.do("PTTL", k)
		n, ok := parseInt(strings.TrimPrefix(got, ":"))
		if !ok || n <= 0 || n > 20000 {
			t.Errorf("PTTL %s after it was given 20s = %s; want the expiry", k, got)
		}
	}
	if st := h.KeepaliveStats(); st.Held != 0 {
		t.Errorf("KeepaliveStats = %+v; want none kept", st)
	}
	for i, s := range servers {
		if p := s.Client().PTTL(context.Background(), "a").Val(); p <= 0 || p > 20*time.Second {
			t.Errorf("backend %d: a's ttl %v", i, p)
		}
	}
}
