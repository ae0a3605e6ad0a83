package commands

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// redis-semaphore 5.7's mutex scripts, byte for byte as it sends them.
const (
	semaphoreRelease = "\n  local key = KEYS[1]\n  local identifier = ARGV[1]\n\n  if redis.call('get', key) == identifier then\n    return redis.call('del', key)\n  end\n\n  return 0\n  "
	semaphoreRefresh = "\n  local key = KEYS[1]\n  local identifier = ARGV[1]\n  local lockTimeout = ARGV[2]\n\n  local value = redis.call('get', key)\n\n  if value == identifier then\n    redis.call('pexpire', key, lockTimeout)\n    return 1\n  end\n\n  return 0\n  "
)

// A Redisson-like reentrant lock on a hash: nil when held (first or one
// more hold), else the holder's remaining ttl; the release answers nil
// (not held), 0 (holds left) or 1 (freed).
const (
	hashAcquire = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	hashRelease = `if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
local c = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if c > 0 then return 0 end
redis.call('del', KEYS[1])
return 1`
	setNXScript = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0`
)

// scriptStack is three real backends behind one command table.
func scriptStack(t *testing.T, tune func(*quorum.Config)) ([]*redistest.Server, *Handler, *fixture) {
	t.Helper()
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{}, tune)
	warmUp(t, h, "k")
	return servers, h, client(t, h)
}

// holdOn stores key=val for ttl on the given backends.
func holdOn(t *testing.T, servers []*redistest.Server, key, val string, ttl time.Duration) {
	t.Helper()
	for _, s := range servers {
		if err := s.Client().Set(context.Background(), key, val, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// valuesOf is key's string value on each backend ("" when absent).
func valuesOf(servers []*redistest.Server, key string) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i], _ = s.Client().Get(context.Background(), key).Result()
	}
	return out
}

func allAre(vals []string, want string) bool {
	for _, v := range vals {
		if v != want {
			return false
		}
	}
	return true
}

// TestReplicatedSemaphoreRelease: redis-semaphore's release, a body no
// table recognises, runs on every backend.
func TestReplicatedSemaphoreRelease(t *testing.T) {
	if got := sha1Hex(semaphoreRelease); got != "7157921a7cc7cfba979acf6d63f073151df17d12" {
		t.Fatalf("release body SHA1 = %s", got)
	}
	if _, ok := scripts[sha1Hex(semaphoreRelease)]; ok {
		t.Fatal("the release body is a recognised script: this test would not test replication")
	}
	servers, _, f := scriptStack(t, nil)
	holdOn(t, servers, "k", "tok", time.Minute)
	if got := f.do(evalsha(semaphoreRelease, k1("k"), "tok")...); got != "-"+msgNoScript {
		t.Fatalf("EVALSHA before EVAL = %s", got)
	}
	if got := f.do(eval(semaphoreRelease, k1("k"), "other")...); got != ":0" {
		t.Fatalf("release by another id = %s", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "tok") {
		t.Fatalf("after a refused release the backends hold %q", vals)
	}
	if got := f.do(evalsha(semaphoreRelease, k1("k"), "tok")...); got != ":1" {
		t.Fatalf("release by the holder = %s", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "") {
		t.Fatalf("after the release the backends hold %q", vals)
	}
}

// TestReplicatedSemaphoreRefresh: redis-semaphore's refresh (GET then
// PEXPIRE) of a lock taken by LOCK, then its release by script.
func TestReplicatedSemaphoreRefresh(t *testing.T) {
	if got := sha1Hex(semaphoreRefresh); got != "594683e49a64ebaf975caf5f8079a1d097c438f1" {
		t.Fatalf("refresh body SHA1 = %s", got)
	}
	servers, _, f := scriptStack(t, nil)
	tok, _ := lockReply(t, f.do("LOCK", "k", "5000"))
	if got := f.do(eval(semaphoreRefresh, k1("k"), "other", "60000")...); got != ":0" {
		t.Fatalf("refresh by another id = %s", got)
	}
	if got := f.do(eval(semaphoreRefresh, k1("k"), tok, "60000")...); got != ":1" {
		t.Fatalf("refresh by the holder = %s", got)
	}
	for i, s := range servers {
		if p, _ := s.Client().PTTL(context.Background(), "k").Result(); p <= 5*time.Second {
			t.Fatalf("backend %d: ttl %v after the refresh", i, p)
		}
	}
	if got := f.do(eval(semaphoreRelease, k1("k"), tok)...); got != ":1" {
		t.Fatalf("release = %s", got)
	}
	if got := f.do("LOCK", "k", "5000"); !strings.HasPrefix(got, "[$") {
		t.Fatalf("LOCK after the scripted release = %s", got)
	}
}

// TestReplicatedReentrantHash: a Redisson-like lock is reentrant for its
// holder, refused to another with the holder's ttl, and freed after as
// many releases as holds.
func TestReplicatedReentrantHash(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	for i := range 2 {
		if got := f.do(eval(hashAcquire, k1("k"), "60000", "id:1")...); got != "nil" {
			t.Fatalf("hold %d = %s", i+1, got)
		}
	}
	for i, s := range servers {
		if n, _ := s.Client().HGet(context.Background(), "k", "id:1").Int(); n != 2 {
			t.Fatalf("backend %d counts %d holds", i, n)
		}
	}
	got := f.do(eval(hashAcquire, k1("k"), "60000", "id:2")...)
	if n, ok := parseInt(strings.TrimPrefix(got, ":")); !strings.HasPrefix(got, ":") || !ok || n <= 0 || n > 60000 {
		t.Fatalf("another id = %s; want the holder's ttl", got)
	}
	if got := f.do(eval(hashRelease, k1("k"), "id:1")...); got != ":0" {
		t.Fatalf("first release = %s", got)
	}
	if got := f.do(eval(hashRelease, k1("k"), "id:1")...); got != ":1" {
		t.Fatalf("second release = %s", got)
	}
	for i, s := range servers {
		if n, err := s.Client().Exists(context.Background(), "k").Result(); err != nil || n != 0 {
			t.Fatalf("backend %d still holds the hash (read: %v)", i, err)
		}
	}
}

// TestReplicatedSplitAnswers: where backends answer differently, the
// rule's reply comes back, and a backend that granted against the reply
// holds nothing afterwards.
func TestReplicatedSplitAnswers(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	// One backend pre-holds another token: the majority grants.
	holdOn(t, servers[:1], "k", "theirs", time.Minute)
	if got := f.do(eval(setNXScript, k1("k"), "mine", "60000")...); got != ":1" {
		t.Fatalf("acquire over one foreign copy = %s", got)
	}
	if vals := valuesOf(servers, "k"); vals[0] != "theirs" || vals[1] != "mine" || vals[2] != "mine" {
		t.Fatalf("backends hold %q", vals)
	}
	// Two pre-hold another token: refused, and the third's grant undone.
	holdOn(t, servers[:2], "j", "theirs", time.Minute)
	if got := f.do(eval(setNXScript, k1("j"), "mine", "60000")...); got != ":0" {
		t.Fatalf("acquire over two foreign copies = %s", got)
	}
	if vals := valuesOf(servers, "j"); vals[0] != "theirs" || vals[1] != "theirs" || vals[2] != "" {
		t.Fatalf("after a refused acquire the backends hold %q", vals)
	}
	// The hash lock: the holders' ttls differ; the smallest comes back.
	ctx := context.Background()
	for i, ttl := range []time.Duration{50 * time.Second, 40 * time.Second} {
		c := servers[i].Client()
		if err := c.HSet(ctx, "h", "id:9", 1).Err(); err != nil {
			t.Fatal(err)
		}
		c.PExpire(ctx, "h", ttl)
	}
	got := f.do(eval(hashAcquire, k1("h"), "60000", "id:1")...)
	n, ok := parseInt(strings.TrimPrefix(got, ":"))
	if !ok || n <= 0 || n > 40000 {
		t.Fatalf("hash acquire over two holders = %s; want the smaller ttl", got)
	}
	if e, err := servers[2].Client().Exists(ctx, "h").Result(); err != nil || e != 0 {
		t.Fatalf("the backend that granted the hash lock still holds it (read: %v)", err)
	}
}

// TestReplicatedNoQuorum: with two of three backends stopped the script
// gets NOQUORUM, and once they run again no backend keeps its effect.
func TestReplicatedNoQuorum(t *testing.T) {
	servers, _, f := scriptStack(t, func(c *quorum.Config) { c.ReleaseRetry = 20 * time.Millisecond })
	servers[0].Stop()
	servers[1].Stop()
	got := f.do(eval(setNXScript, k1("k"), "mine", "60000")...)
	servers[0].Cont()
	servers[1].Cont()
	if !strings.HasPrefix(got, "-NOQUORUM ") {
		t.Fatalf("with two backends stopped = %s", got)
	}
	if v := valuesOf(servers, "k")[2]; v != "" {
		t.Fatalf("the running backend kept %q after the failed round", v)
	}
	eventually(t, 10*time.Second, "no backend holds k", func() bool { return allAre(valuesOf(servers, "k"), "") })
}

// TestReplicatedScriptCommands: SCRIPT LOAD then EVALSHA, EXISTS and
// FLUSH over the cache; the recognised scripts stay after a FLUSH.
func TestReplicatedScriptCommands(t *testing.T) {
	_, _, f := scriptStack(t, nil)
	sha := sha1Hex(setNXScript)
	if got := f.do("SCRIPT", "LOAD", setNXScript); got != "$"+sha {
		t.Fatalf("SCRIPT LOAD = %s", got)
	}
	cad := sha1Hex(scriptCAD)
	if got := f.do("SCRIPT", "EXISTS", sha, cad, "0000000000000000000000000000000000000000"); got != "[:1 :1 :0]" {
		t.Fatalf("SCRIPT EXISTS = %s", got)
	}
	if got := f.do("EVALSHA", strings.ToUpper(sha), "1", "k", "mine", "60000"); got != ":1" {
		t.Fatalf("EVALSHA after SCRIPT LOAD = %s", got)
	}
	if got := f.do("SCRIPT", "FLUSH", "ASYNC"); got != "+OK" {
		t.Fatalf("SCRIPT FLUSH = %s", got)
	}
	if got := f.do("SCRIPT", "EXISTS", sha, cad); got != "[:0 :1]" {
		t.Fatalf("SCRIPT EXISTS after FLUSH = %s", got)
	}
	if got := f.do(evalsha(setNXScript, k1("k"), "mine", "60000")...); got != "-"+msgNoScript {
		t.Fatalf("EVALSHA after FLUSH = %s", got)
	}
}

const scriptCAD = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// TestReplicatedBackendsLostScripts: backends that lost their scripts (one
// restarted, the others flushed) still run a cached script.
func TestReplicatedBackendsLostScripts(t *testing.T) {
	servers, h, f := scriptStack(t, func(c *quorum.Config) { c.RestartQuarantine = 0 })
	if got := f.do(eval(setNXScript, k1("k"), "a", "60000")...); got != ":1" {
		t.Fatalf("first run = %s", got)
	}
	servers[0].Restart(t)
	for _, s := range servers[1:] {
		if err := s.Client().ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	warmUp(t, h, "j")
	if got := f.do(evalsha(setNXScript, k1("j"), "b", "60000")...); got != ":1" {
		t.Fatalf("after the backends lost their scripts = %s", got)
	}
	if vals := valuesOf(servers, "j"); !allAre(vals, "b") {
		t.Fatalf("backends hold %q", vals)
	}
}

// TestReplicatedReadOnlyAndReserved: a writing script under EVAL_RO, and
// a reserved key in KEYS or ARGV, change nothing on any backend.
func TestReplicatedReadOnlyAndReserved(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	f.do("SCRIPT", "LOAD", setNXScript)
	calls := []struct {
		call []string
		want string
	}{
		{[]string{"EVAL_RO", setNXScript, "1", "k", "a", "60000"}, "-" + msgROScript},
		{[]string{"EVALSHA_RO", sha1Hex(setNXScript), "1", "k", "a", "60000"}, "-" + msgROScript},
		{[]string{"EVAL", setNXScript, "1", "redlockd:x", "a", "60000"}, "-" + msgReservedKey},
		{[]string{"EVAL", setNXScript, "1", "k", "redlockd:x", "60000"}, "-" + msgReservedKey},
		{[]string{"EVALSHA", sha1Hex(setNXScript), "1", "k", "a", "redlockd:"}, "-" + msgReservedKey},
	}
	for _, c := range calls {
		if got := f.do(c.call...); got != c.want {
			t.Errorf("%s = %s; want %s", shortCall(c.call), got, c.want)
		}
	}
	for i, s := range servers {
		if keys, _ := s.Client().Keys(context.Background(), "*").Result(); len(keys) != 0 {
			t.Fatalf("backend %d holds %v", i, keys)
		}
	}
}

// TestReplicatedSessionTTL: a key a script leaves without an expiry gets
// the session ttl on every backend.
func TestReplicatedSessionTTL(t *testing.T) {
	servers, _, f := scriptStack(t, func(c *quorum.Config) { c.SessionTTL = 5 * time.Second })
	if got := f.do(eval(`return redis.call('set', KEYS[1], ARGV[1])`, k1("k"), "v")...); got != "+OK" {
		t.Fatalf("SET by script = %s", got)
	}
	for i, s := range servers {
		if p, _ := s.Client().PTTL(context.Background(), "k").Result(); p <= 0 || p > 5*time.Second {
			t.Fatalf("backend %d: ttl %v; want the session ttl", i, p)
		}
	}
}

// TestReplicatedTwoProxies: each proxy has its own cache (EVALSHA of a
// body only the other saw is NOSCRIPT, as with two Redis servers), and a
// lock one takes by script the other releases by script.
func TestReplicatedTwoProxies(t *testing.T) {
	servers := redistest.StartN(t, 3)
	a := client(t, redisHandler(t, servers, Options{}))
	b := client(t, redisHandler(t, servers, Options{}))
	warmUp(t, a.h, "k")
	warmUp(t, b.h, "k")
	if got := a.do(eval(setNXScript, k1("k"), "tok", "60000")...); got != ":1" {
		t.Fatalf("acquire on A = %s", got)
	}
	if got := b.do(evalsha(setNXScript, k1("k"), "x", "60000")...); got != "-"+msgNoScript {
		t.Fatalf("EVALSHA on B of A's body = %s", got)
	}
	if got := b.do(eval(setNXScript, k1("k"), "x", "60000")...); got != ":0" {
		t.Fatalf("acquire on B while A holds = %s", got)
	}
	if got := b.do(eval(semaphoreRelease, k1("k"), "tok")...); got != ":1" {
		t.Fatalf("release on B = %s", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "") {
		t.Fatalf("backends hold %q", vals)
	}
}

// TestReplicatedReleaseOfWaitedLock: a LOCK … WAIT gets the lock that a
// script released, and a FENCE lock's token is released by script too.
func TestReplicatedReleaseOfWaitedLock(t *testing.T) {
	servers, h, f := scriptStack(t, nil)
	tok, _ := lockReply(t, f.do("LOCK", "k", "60000", "FENCE"))
	waiter := client(t, h)
	got := make(chan string, 1)
	go func() { got <- waiter.do("LOCK", "k", "60000", "WAIT", "10000") }()
	if r := f.do(eval(semaphoreRelease, k1("k"), tok)...); r != ":1" {
		t.Fatalf("release by script = %s", r)
	}
	wtok, _ := lockReply(t, <-got)
	// The waiter's round may reach a backend before the script's delete
	// does there: that backend refused it and is empty now. A majority
	// holds the waiter's token, and none the released one.
	vals := valuesOf(servers, "k")
	held := 0
	for _, v := range vals {
		if v == tok {
			t.Fatalf("backends hold %q; the released token is still there", vals)
		}
		if v == wtok {
			held++
		}
	}
	if held < 2 {
		t.Fatalf("backends hold %q; want the waiter's token on a majority", vals)
	}
}

// TestReplicatedCommandNamedByArgument: a script that takes a command's
// name from ARGV (Redisson's later unlock publishes so) runs when the
// argument names PUBLISH, and is refused, changing nothing, when it names
// anything else.
func TestReplicatedCommandNamedByArgument(t *testing.T) {
	servers, _, f := scriptStack(t, nil)
	const body = `redis.call('del', KEYS[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1`
	holdOn(t, servers, "k", "tok", time.Minute)
	if got := f.do(eval(body, []string{"k", "chan"}, "x", "set")...); !strings.Contains(got, "command 'set' named by ARGV[2]") {
		t.Fatalf("a script naming SET by an argument = %s, want the refusal", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "tok") {
		t.Fatalf("after a refused run the backends hold %q", vals)
	}
	if vals := valuesOf(servers, "chan"); !allAre(vals, "") {
		t.Fatalf("a refused run wrote %q", vals)
	}
	if got := f.do(eval(body, []string{"k", "chan"}, "x", "publish")...); got != ":1" {
		t.Fatalf("a script naming PUBLISH by an argument = %s", got)
	}
	if vals := valuesOf(servers, "k"); !allAre(vals, "") {
		t.Fatalf("after the run the backends hold %q", vals)
	}
}

// opRecorder is a quorum.Observer that keeps every operation's outcome.
type opRecorder struct {
	mu  sync.Mutex
	ops []string // "op/outcome"
}

func (r *opRecorder) NodesDone(string, []quorum.NodeResult) {}

func (r *opRecorder) OpDone(op, outcome string, _ time.Duration, _, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op+"/"+outcome)
}

func (r *opRecorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, o := range r.ops {
		if o == key {
			n++
		}
	}
	return n
}

// TestReplicatedDisagreed: three backends that all answer, one with a
// value, one with a script error (WRONGTYPE) and one with nil, give no
// reply and no class a majority: the client gets NOQUORUM backends
// disagreed, and the script's round is counted as no_quorum.
func TestReplicatedDisagreed(t *testing.T) {
	const body = `return redis.call("get",KEYS[1])`
	if _, ok := scripts[sha1Hex(body)]; ok {
		t.Fatal("the GET body is a recognised script: this test would not test replication")
	}
	rec := &opRecorder{}
	servers, _, f := scriptStack(t, func(c *quorum.Config) { c.Observer = rec })
	ctx := context.Background()
	if err := servers[0].Client().Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := servers[1].Client().HSet(ctx, "k", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	before := rec.count("script/no_quorum")
	got := f.do(eval(body, k1("k"))...)
	if want := "-NOQUORUM backends disagreed: 3 of 3 answered, no reply had a majority"; got != want {
		t.Fatalf("GET by script over a string, a hash and nothing = %s; want %s", got, want)
	}
	if n := rec.count("script/no_quorum") - before; n != 1 {
		t.Fatalf("the disagreed round counted %d times as script/no_quorum; operations %v", n, rec.ops)
	}
	if n := rec.count("script/ok") + rec.count("script/error") + rec.count("script/contended"); n != 0 {
		t.Fatalf("a script round counted otherwise: %v", rec.ops)
	}
	// The read changed nothing: each backend keeps what it held.
	if v, _ := servers[0].Client().Get(ctx, "k").Result(); v != "v" {
		t.Fatalf("backend 0 holds %q", v)
	}
	if v, _ := servers[1].Client().HGet(ctx, "k", "f").Result(); v != "v" {
		t.Fatalf("backend 1's hash holds %q", v)
	}
	if e, err := servers[2].Client().Exists(ctx, "k").Result(); err != nil || e != 0 {
		t.Fatalf("backend 2 holds k (read: %v)", err)
	}
}
