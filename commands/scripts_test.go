package commands

import (
	"context"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The SHA1s that the libraries send (REFERENCE.md and the packages read);
// a changed byte in a body would make EVALSHA miss.
func TestLockScriptSHA1s(t *testing.T) {
	want := map[string]string{
		"e950836ed1e694540c503ef9972b8de518044d3b": redsyncDelete,
		"d75bb8b5bd13532ddedd17762e772346e39b321e": redsyncTouch,
		"b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79": redsyncTouchOrSetNX,
		"c3f8721cbb97f72bc19e972846bd7aaf91901658": redisPyRelease,
		"a4e8783852e6b949f9ef3a97212805108459a890": redisPyExtend,
		"1cac51482acf5858da00f6d685d68f886cd6b6b2": redisPyReacquire,
		"96da70f7716f27d278a5218544df37fd8b0a5e4c": redlockAcquireV5,
		"aed6f382e410db8ba7926d4e5e9aab410bf2a78a": redlockExtendV5,
		"e4612211c9f8f51c257e26e056b0a654b3187242": redlockReleaseV5,
		"e5a322e2634ef59a516e8ea150cb085afafee684": redlockAcquireV41,
		"ce46f80993d5dac20dd066eb301a4e37994bdbed": redlockExtendV42,
		"0f0f23b9048b36752b5be114f357ba083449f908": redlockReleaseV42,
		"f5f7bd3a3aa4a63c507c1155c5ea1219b350d992": potteryAcquired,
		"ba015a80261b616e7a62d35df0b8e3edbe6c9414": potteryExtend,
		"a4aada0b36710970eedaaaeec4a6b7d8c78c4f80": potteryRelease,
		"3875d208d9e377969d2022550302cc83ad17b584": rueidisAcquireAt,
		"fa3d1aaa7e4145457755016a3d5daf72fa7a11bf": rueidisAcquirePX,
		"c10e8119872659b926e8e28002d9b7fccbf15617": rueidisForceAt,
		"4384ed08baff4dd7071b6c78c516a2fded4ee3e7": rueidisForcePX,
		"852ba6ec6104340ced36643283c856d4698569e4": rueidisExtend,
		"9eb62214c9af87ae5f9a9f12bb4520281c0d2ae1": rueidisRelease,
		"a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf": bsmRefresh,
		"cf0e94b2e9ffc7e04395cf88f7583fc309985910": bsmRelease,
		"6484da7d58920897fdc22b7f9afd1a3d47524ea8": bsmPTTL,
	}
	f := newFixture(t, Options{})
	for sha, body := range want {
		if got := sha1Hex(body); got != sha {
			t.Errorf("body SHA1 %s, want %s", got, sha)
		}
		if got := f.do("SCRIPT", "LOAD", body); got != "$"+sha {
			t.Errorf("SCRIPT LOAD = %s, want $%s", got, sha)
		}
		if got := f.do("SCRIPT", "EXISTS", strings.ToUpper(sha)); got != "[:1]" {
			t.Errorf("SCRIPT EXISTS %s = %s", sha, got)
		}
	}
	if got := f.do("SCRIPT", "FLUSH"); got != "+OK" {
		t.Fatalf("SCRIPT FLUSH = %s", got)
	}
	if got := f.do("EVALSHA", sha1Hex(redsyncDelete), "1", "k", "t"); got != ":-1" {
		t.Fatalf("EVALSHA after SCRIPT FLUSH = %s: the lock scripts are built in", got)
	}
}

type step struct {
	cmd  []string
	want string
}

func runSteps(t *testing.T, f *fixture, steps []step) {
	t.Helper()
	for i, st := range steps {
		if got := f.do(st.cmd...); !strings.HasPrefix(got, st.want) {
			t.Fatalf("step %d %v = %q, want %q", i, st.cmd, got, st.want)
		}
	}
}

// evalsha builds EVALSHA of body with the keys and then the args.
func evalsha(body string, keys []string, args ...string) []string {
	cmd := append([]string{"EVALSHA", sha1Hex(body), itoa(len(keys))}, keys...)
	return append(cmd, args...)
}

func eval(body string, keys []string, args ...string) []string {
	cmd := evalsha(body, keys, args...)
	cmd[0], cmd[1] = "EVAL", body
	return cmd
}

func itoa(n int) string { return strings.TrimPrefix(formatInt(int64(n)), "+") }

func formatInt(n int64) string {
	var r recorder
	r.WriteInt(n)
	return strings.TrimPrefix(r.String(), ":")
}

func k1(k string) []string { return []string{k} }

func TestRedsyncScripts(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{evalsha(redsyncDelete, k1("k"), "t"), ":-1"},
		{[]string{"SET", "k", "t", "NX", "PX", "10000"}, "+OK"},
		{evalsha(redsyncDelete, k1("k"), "other"), ":0"},
		{evalsha(redsyncTouch, k1("k"), "t", "20000"), ":1"},
		{evalsha(redsyncTouch, k1("k"), "other", "20000"), ":0"},
		{eval(redsyncDelete, k1("k"), "t"), ":1"},
		{evalsha(redsyncTouch, k1("k"), "t", "20000"), ":0"},
		{[]string{"GET", "k"}, "nil"},
		{evalsha(redsyncTouchOrSetNX, k1("k"), "t", "20000"), ":1"},
		{[]string{"GET", "k"}, "$t"},
		{evalsha(redsyncTouchOrSetNX, k1("k"), "t", "30000"), ":1"},
		{evalsha(redsyncTouchOrSetNX, k1("k"), "u", "30000"), ":0"},
		{[]string{"GET", "k"}, "$t"},
		{evalsha(redsyncTouch, k1("k"), "t", "0"), "-ERR invalid expire time in 'evalsha' command"},
		{evalsha(redsyncTouch, k1("k"), "t"), "-ERR the go-redsync touch script takes 1 key(s) and 2 argument(s)"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p <= 20000 || p > 30000 {
		t.Fatalf("PTTL after touch-or-setnx 30000 = %d", p)
	}
}

// rueidislock's scripts run as SET, RENEW and UNLOCK: the key holds the
// value with the expiry the script names, the extend moves it to the
// deadline (or deletes the key once the deadline is past, as PEXPIREAT
// does), the release deletes it.
func TestRueidisLockScripts(t *testing.T) {
	f := newFixture(t, Options{})
	at := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }
	runSteps(t, f, []step{
		{evalsha(rueidisAcquireAt, k1("k"), "t", at(20*time.Second)), "+OK"},
		{evalsha(rueidisAcquireAt, k1("k"), "u", at(20*time.Second)), "nil"},
		{evalsha(rueidisAcquirePX, k1("k"), "u", "20000"), "nil"},
		{[]string{"GET", "k"}, "$t"},
		{evalsha(rueidisExtend, k1("k"), "u", at(time.Minute)), ":0"},
		{evalsha(rueidisExtend, k1("k"), "t", at(time.Minute)), ":1"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p <= 40000 || p > 60000 {
		t.Fatalf("PTTL after the extend to a minute from now = %d", p)
	}
	runSteps(t, f, []step{
		{evalsha(rueidisRelease, k1("k"), "u", at(time.Minute)), ":0"},
		{evalsha(rueidisRelease, k1("k"), "t", at(time.Minute)), ":1"},
		{[]string{"GET", "k"}, "nil"},
		{evalsha(rueidisAcquirePX, k1("k"), "t", "20000"), "+OK"},
		{evalsha(rueidisForceAt, k1("k"), "u", at(30*time.Second)), "+OK"},
		{[]string{"GET", "k"}, "$u"},
		{evalsha(rueidisForcePX, k1("k"), "v", "30000"), "+OK"},
		{[]string{"GET", "k"}, "$v"},
		{evalsha(rueidisExtend, k1("k"), "v", "1000"), ":1"}, // a deadline in 1970: deleted
		{[]string{"GET", "k"}, "nil"},
		{evalsha(rueidisAcquireAt, k1("k"), "t", "1000"), "-ERR invalid expire time in 'set' command"},
		{evalsha(rueidisAcquireAt, k1("k"), "t", at(100*24*time.Hour)), "-ERR"},
		{evalsha(rueidisExtend, k1("k"), "t", "soon"), "-ERR value is not an integer"},
		{evalsha(rueidisRelease, k1("k"), "t"), "-ERR the rueidislock release script takes 1 key(s) and 2 argument(s)"},
	})
}

// bsm/redislock's refresh, ttl and release scripts run as RENEW, a quorum
// read and UNLOCK.
func TestBsmRedisLockScripts(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{evalsha(bsmPTTL, k1("k"), "t"), ":-3"},
		{[]string{"SET", "k", "t", "NX", "PX", "10000"}, "+OK"},
		{evalsha(bsmPTTL, k1("k"), "u"), ":-3"},
		{evalsha(bsmRefresh, k1("k"), "u", "30000"), ":0"},
		{evalsha(bsmRefresh, k1("k"), "t", "30000"), ":1"},
	})
	if p := parseReplyInt(t, f.do(evalsha(bsmPTTL, k1("k"), "t")...)); p <= 20000 || p > 30000 {
		t.Fatalf("the ttl script after a refresh to 30 s = %d", p)
	}
	runSteps(t, f, []step{
		{evalsha(bsmRelease, k1("k"), "u"), ":0"},
		{evalsha(bsmRelease, k1("k"), "t"), ":1"},
		{[]string{"GET", "k"}, "nil"},
		{evalsha(bsmRefresh, k1("k"), "t", "30000"), ":0"},
		{evalsha(bsmPTTL, k1("k"), "t"), ":-3"},
		{[]string{"SET", "k", "t", "NX"}, "+OK"}, // a session lock: no expiry
		{evalsha(bsmPTTL, k1("k"), "t"), ":-1"},
		{evalsha(bsmRefresh, k1("k"), "t"), "-ERR the bsm/redislock refresh script takes 1 key(s) and 2 argument(s)"},
	})
}

func TestRedisPyScripts(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{[]string{"SET", "k", "t", "NX", "PX", "10000"}, "+OK"},
		{evalsha(redisPyExtend, k1("k"), "t", "5000", "0"), ":1"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p <= 10000 || p > 15000 {
		t.Fatalf("PTTL after adding 5000 to 10000 = %d", p)
	}
	runSteps(t, f, []step{
		{evalsha(redisPyExtend, k1("k"), "t", "3000", "1"), ":1"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p > 3000 {
		t.Fatalf("PTTL after replacing with 3000 = %d", p)
	}
	runSteps(t, f, []step{
		// The sum is capped at max-ttl (60s).
		{evalsha(redisPyExtend, k1("k"), "t", "59000", "0"), ":1"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p <= 59000 || p > 60000 {
		t.Fatalf("PTTL after adding 59000 to ~3000 = %d, want capped at 60000", p)
	}
	runSteps(t, f, []step{
		{evalsha(redisPyReacquire, k1("k"), "t", "8000"), ":1"},
		{evalsha(redisPyReacquire, k1("k"), "x", "8000"), ":0"},
		{evalsha(redisPyRelease, k1("k"), "x"), ":0"},
		{[]string{"GET", "k"}, "$t"},
		{evalsha(redisPyRelease, k1("k"), "t"), ":1"},
		{evalsha(redisPyExtend, k1("k"), "t", "1000", "0"), ":0"},
		{evalsha(redisPyReacquire, k1("k"), "t", "1000"), ":0"},
		{evalsha(redisPyExtend, k1("k"), "t", "1000"), "-ERR the redis-py extend script takes 1 key(s) and 3 argument(s)"},
		{evalsha(redisPyExtend, k1("k"), "t", "61000", "1"), "-ERR ttl exceeds max-ttl"},
	})
	if p := parseReplyInt(t, f.do("PTTL", "k")); p != -2 {
		t.Fatalf("PTTL after release = %d", p)
	}
}

func TestPotteryScripts(t *testing.T) {
	f := newFixture(t, Options{})
	runSteps(t, f, []step{
		{evalsha(potteryAcquired, k1("k"), "t"), ":0"},
		{[]string{"SET", "k", "t", "NX", "PX", "10000"}, "+OK"},
		{evalsha(potteryAcquired, k1("k"), "x"), ":0"},
		{evalsha(potteryExtend, k1("k"), "t", "20000"), ":1"},
		{evalsha(potteryExtend, k1("k"), "x", "20000"), ":0"},
		{evalsha(potteryRelease, k1("k"), "x"), ":0"},
	})
	ro := evalsha(potteryAcquired, k1("k"), "t")
	ro[0] = "EVALSHA_RO"
	if p := parseReplyInt(t, f.do(ro...)); p <= 10000 || p > 20000 {
		t.Fatalf("acquired-ttl after extend to 20000 = %d", p)
	}
	rel := eval(potteryRelease, k1("k"), "t")
	rel[0] = "EVAL_RO"
	runSteps(t, f, []step{
		{rel, "-" + msgROScript},
		{[]string{"EVAL_RO", cadScript, "1", "k", "t"}, "-" + msgROScript},
		{evalsha(potteryRelease, k1("k"), "t"), ":1"},
		{[]string{"EXISTS", "k"}, ":0"},
		{[]string{"SET", "k", "t", "NX"}, "+OK"}, // a session lock: no expiry
		{evalsha(potteryAcquired, k1("k"), "t"), ":0"},
	})
}

func TestRedlockScripts(t *testing.T) {
	for _, v := range []struct{ name, acquire, extend, release string }{
		{"v4.0", redlockAcquireV40, redlockExtendV40, redlockReleaseV40},
		{"v4.1", redlockAcquireV41, redlockExtendV41, redlockReleaseV40},
		{"v4.2", redlockAcquireV41, redlockExtendV42, redlockReleaseV42},
		{"v5", redlockAcquireV5, redlockExtendV5, redlockReleaseV5},
	} {
		t.Run(v.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			ab, bc := []string{"a", "b"}, []string{"b", "c"}
			runSteps(t, f, []step{
				{evalsha(v.acquire, ab, "t1", "10000"), ":2"},
				{evalsha(v.acquire, bc, "t2", "10000"), ":0"},
				{[]string{"EXISTS", "a", "b", "c"}, ":2"},
				{evalsha(v.acquire, k1("c"), "t2", "10000"), ":1"},
				{evalsha(v.extend, ab, "t1", "20000"), ":2"},
				{evalsha(v.extend, k1("c"), "t2", "20000"), ":1"},
				{evalsha(v.extend, bc, "t1", "20000"), ":0"},
				{evalsha(v.release, bc, "t2"), ":1"},
				{[]string{"GET", "c"}, "nil"},
				{evalsha(v.release, []string{"a", "c"}, "t1"), ":1"},
				{evalsha(v.release, k1("a"), "t1"), ":0"},
				{evalsha(v.acquire, ab, "t1"), "-ERR the node-redlock acquire script takes at least 1 key(s) and 2 argument(s)"},
			})
		})
	}
}

// Each node takes all keys of a multi-key lock or none: a node where one
// key is held elsewhere votes no and stores nothing, and the majority of
// the other nodes still grants the lock.
func TestRedlockMultiKeyAtomicPerNode(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if ok, err := nodetest.SetNX(ctx, f.nodes[0], "b", "stranger", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX on m1 = %v, %v", ok, err)
	}
	runSteps(t, f, []step{{evalsha(redlockAcquireV5, []string{"a", "b"}, "t", "10000"), ":2"}})
	if _, _, held, err := nodetest.Get(ctx, f.nodes[0], "a"); err != nil || held {
		t.Fatalf("m1 refused the lock but stored a (read: %v)", err)
	}
	for _, n := range f.nodes[1:] {
		if tok, _, _, _ := nodetest.Get(ctx, n, "b"); tok != "t" {
			t.Fatalf("%s holds b for %q", n.Name(), tok)
		}
	}
	// x held elsewhere on two nodes: only m1 can take x and y, the acquire
	// fails, and it leaves nothing of its token anywhere.
	for _, n := range f.nodes[1:] {
		if ok, err := nodetest.SetNX(ctx, n, "x", "stranger", time.Minute); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	runSteps(t, f, []step{{evalsha(redlockAcquireV5, []string{"x", "y"}, "t", "10000"), ":0"}})
	for _, n := range f.nodes {
		if _, _, held, err := nodetest.Get(ctx, n, "y"); err != nil || held {
			t.Fatalf("%s still holds y after a failed acquire (read: %v)", n.Name(), err)
		}
	}
}

// TestOwnerTokenRefusedByExtendsWithoutOwnerForm: the extend forms that
// cannot carry an owner lock's hold count along refuse an owner's token
// and leave the lock as it was.
func TestOwnerTokenRefusedByExtendsWithoutOwnerForm(t *testing.T) {
	f := newFixture(t, Options{})
	tok, _ := lockReply(t, f.do("LOCK", "k", "10000", "OWNER", "w"))
	calls := map[string][]string{
		"redis-py extend add":       evalsha(redisPyExtend, k1("k"), tok, "50000", "0"),
		"go-redsync touch-or-setnx": evalsha(redsyncTouchOrSetNX, k1("k"), tok, "50000"),
		"node-redlock extend two":   evalsha(redlockExtendV5, []string{"k", "k2"}, tok, "50000"),
	}
	for name, call := range calls {
		if got := f.do(call...); !strings.HasPrefix(got, "-ERR redlockd does not support this form of 'evalsha'") {
			t.Errorf("%s with an owner token = %s", name, got)
		}
	}
	got := f.do("PTTL", "k")
	if ms, err := strconv.Atoi(strings.TrimPrefix(got, ":")); err != nil || ms > 10000 || ms < 9000 {
		t.Fatalf("PTTL after the refused extends = %s, want the LOCK's 10000 or a little less", got)
	}
}
