package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// The proxy's own keys: each is seeded with "42" on every backend, and no
// command from a client may read, write or expire them.
var reservedKeys = []string{
	"redlockd:fence:{k}", "redlockd:holds:{k}", "redlockd:wait:{k}",
	"redlockd:released", "redlockd:health", "redlockd:",
}

// reservedCalls names the reserved key rk in every place where a command
// takes a key, beside keys that are not reserved where a command takes
// several ("held" is a lock of token 42, "free" is absent).
func reservedCalls(rk string) [][]string {
	cad := scripts[sha1Hex(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)].body
	return [][]string{
		{"GET", rk}, {"PTTL", rk}, {"TTL", rk}, {"LOCKINFO", rk},
		{"EXISTS", rk}, {"EXISTS", "held", rk},
		{"DEL", rk}, {"DEL", "held", rk}, {"DEL", rk, "held"},
		{"EXPIRE", rk, "600"}, {"EXPIRE", rk, "0"}, {"PEXPIRE", rk, "600000"},
		{"SET", rk, "v"}, {"SET", rk, "v", "NX"}, {"SET", rk, "v", "NX", "PX", "1000"},
		{"SET", rk, "99", "PX", "600000"}, {"SET", rk, "42", "XX", "PX", "600000", "IFEQ", "42"},
		{"LOCK", rk, "1000"}, {"LOCK", rk, "1000", "FENCE"}, {"LOCK", rk, "1000", "KEEPALIVE"},
		{"LOCK", rk, "1000", "OWNER", "o"}, {"LOCK", rk, "1000", "WAIT", "100"},
		{"RENEW", rk, "42", "600000"}, {"UNLOCK", rk, "42"},
		{"DELIFEQ", rk, "42"}, {"DELEX", rk}, {"DELEX", rk, "IFEQ", "42"},
		{"EVAL", cad, "1", rk, "42"}, {"EVALSHA", sha1Hex(cad), "1", rk, "42"},
		{"EVAL_RO", potteryAcquired, "1", rk, "42"}, {"EVALSHA_RO", sha1Hex(potteryAcquired), "1", rk, "42"},
		{"EVALSHA", sha1Hex(redsyncDelete), "1", rk, "42"},
		{"EVALSHA", sha1Hex(redsyncTouchOrSetNX), "1", rk, "42", "600000"},
		{"EVAL", redlockAcquireV5, "2", "free", rk, "42", "1000"},
		{"EVAL", redlockExtendV5, "2", "held", rk, "42", "600000"},
		{"EVAL", redlockReleaseV5, "2", "held", rk, "42"},
		{"EVAL", redisPyExtend, "1", rk, "42", "600000", "0"},
		{"WATCH", rk}, {"WATCH", "held", rk},
	}
}

// keylessCommands name no key. A command added to the table must either
// say where its keys are (and get a case in reservedCalls) or be listed
// here: it cannot slip past the reserved-namespace check unnoticed.
var keylessCommands = []string{
	"auth", "client", "command", "config", "dbsize", "echo", "hello", "info",
	"ping", "quit", "reset", "scan", "script", "select", "readonly", "readwrite",
	// A transaction's commands are checked as they are queued
	// (TestReservedKeyInTransaction).
	"multi", "exec", "discard", "unwatch",
	// The pub/sub commands name channels, not keys; their reserved
	// channels are refused on their own (e2e TestPubSubReservedChannels).
	"psubscribe", "publish", "pubsub", "punsubscribe", "subscribe", "unsubscribe",
}

// TestReservedKeysEveryCommand: every key-taking command that names a key
// in the reserved namespace, alone or beside others, gets the reserved-key error
// and leaves every backend exactly as it was.
func TestReservedKeysEveryCommand(t *testing.T) {
	servers := redistest.StartN(t, 3)
	f := client(t, redisHandler(t, servers, Options{MaxTTL: time.Hour}))
	if got := f.do("LOCK", "held", "600000", "TOKEN", "42"); !strings.HasPrefix(got, "[$42 ") {
		t.Fatalf("LOCK held = %q", got)
	}
	// LOCK answers once a majority stored the token: the last SET may still
	// be landing, and must not show up as a change made by a later call.
	for _, s := range servers {
		eventually(t, 5*time.Second, "held stored on "+s.Addr(), func() bool {
			v, err := s.Client().Get(context.Background(), "held").Result()
			return err == nil && v == "42"
		})
	}
	seedReserved(t, servers)
	want := snapshot(t, servers)
	for _, rk := range reservedKeys {
		for _, call := range reservedCalls(rk) {
			if got := f.do(call...); got != "-"+msgReservedKey {
				t.Errorf("%s = %q, want -%s", shortCall(call), got, msgReservedKey)
			}
			if got := snapshot(t, servers); !maps.Equal(got, want) {
				t.Fatalf("%s changed the backends:\n got %v\nwant %v", shortCall(call), got, want)
			}
		}
	}
}

// TestReservedKeysCoverTheTable: each command of the table either names
// keys, and then TestReservedKeysEveryCommand calls it with a reserved
// one, or is known to name none.
func TestReservedKeysCoverTheTable(t *testing.T) {
	called := map[string]bool{}
	for _, call := range reservedCalls("redlockd:x") {
		called[strings.ToLower(call[0])] = true
	}
	for _, name := range slices.Sorted(maps.Keys(table)) {
		keyless := slices.Contains(keylessCommands, name)
		switch named := table[name].keys != keysNone; {
		case named && !called[name]:
			t.Errorf("%s takes keys but no reserved-key case calls it", name)
		case !named && !keyless:
			t.Errorf("%s says it names no key but is not listed as keyless", name)
		case named && keyless:
			t.Errorf("%s is listed as keyless but takes keys", name)
		}
	}
}

func seedReserved(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		for _, rk := range reservedKeys {
			if err := s.Client().Set(context.Background(), rk, "42", 60*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// snapshot is every key of every backend with its value and whether its
// ttl is still within the 60 s (or 600 s for "held") it was given.
func snapshot(t *testing.T, servers []*redistest.Server) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for i, s := range servers {
		rc := s.Client()
		keys, err := rc.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			v, _ := rc.Get(ctx, k).Result()
			pttl, _ := rc.PTTL(ctx, k).Result()
			limit := 60 * time.Second
			if k == "held" {
				limit = 600 * time.Second
			}
			out[fmt.Sprintf("%d/%s", i, k)] = fmt.Sprintf("%s ttl-ok=%v", v, pttl > 0 && pttl <= limit)
		}
	}
	return out
}

// shortCall names a call in a failure without a whole script body.
func shortCall(call []string) string {
	words := make([]string, len(call))
	for i, w := range call {
		w = strings.Join(strings.Fields(w), " ")
		if len(w) > 20 {
			w = w[:20] + "…"
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// TestReservedValuesRefused: a value the nodes write themselves (the
// marker a semaphore's key holds while permits are held) cannot be given
// as a client's token or compared value: a copy would pass for the marker,
// and a compare-and-delete of the marker would free the key under its
// permits. Each such command is refused and changes nothing.
func TestReservedValuesRefused(t *testing.T) {
	servers := redistest.StartN(t, 3)
	f := client(t, redisHandler(t, servers, Options{MaxTTL: time.Hour}))
	if got := f.do("LOCK", "sem", "600000", "PERMITS", "2"); !strings.HasPrefix(got, "[$permit:2:") {
		t.Fatalf("LOCK sem PERMITS 2 = %q", got)
	}
	marker := "redlockd:permits:2"
	for _, s := range servers {
		eventually(t, 5*time.Second, "marker stored on "+s.Addr(), func() bool {
			v, err := s.Client().Get(context.Background(), "sem").Result()
			return err == nil && v == marker
		})
	}
	want := snapshot(t, servers)
	calls := [][]string{
		{"UNLOCK", "sem", marker}, {"RENEW", "sem", marker, "600000"},
		{"DELIFEQ", "sem", marker}, {"DELEX", "sem", "IFEQ", marker},
		{"SET", "sem", "mine", "PX", "600000", "IFEQ", marker},
		{"SET", "free", marker, "NX", "PX", "600000"}, {"SET", "free", marker},
		{"LOCK", "free", "600000", "TOKEN", marker},
		{"SET", "free", "redlockd:shared", "NX", "PX", "600000"},
	}
	for _, call := range calls {
		if got := f.do(call...); got != "-ERR value is in redlockd's reserved namespace" {
			t.Errorf("%v = %q, want the reserved-value error", call, got)
		}
	}
	// A library's recognised script (release, acquire) and a replicated
	// one take the same arguments: the key error, as for any script
	// argument in the namespace.
	cad := scripts[sha1Hex(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)].body
	for _, call := range [][]string{
		{"EVALSHA", sha1Hex(cad), "1", "sem", marker}, {"EVAL", cad, "1", "sem", marker},
		{"EVALSHA", sha1Hex(redsyncTouchOrSetNX), "1", "free", "redlockd:shared", "600000"},
		{"EVAL", redlockAcquireV5, "1", "free", "redlockd:shared", "600000"},
		{"EVAL_RO", potteryAcquired, "1", "sem", marker},
	} {
		if got := f.do(call...); got != "-"+msgReservedKey {
			t.Errorf("%v = %q, want the reserved-key error", call[:2], got)
		}
	}
	if got := snapshot(t, servers); !maps.Equal(got, want) {
		t.Errorf("refused commands changed the backends:\nbefore %v\nafter  %v", want, got)
	}
	if got := f.do("PUBLISH", "news", "redlockd:is a word here"); strings.HasPrefix(got, "-") {
		t.Errorf("PUBLISH of a message that starts with redlockd: = %q", got)
	}
}

// TestReservedKeyInTransaction: a command queued in MULTI that names a
// reserved key is refused as it is queued, and the transaction aborts
// (as Redis aborts one whose command was refused), changing nothing.
func TestReservedKeyInTransaction(t *testing.T) {
	f := newFixture(t, Options{})
	for _, step := range [][2]string{
		{"MULTI", "+OK"},
		{"SET free v NX PX 1000", "+QUEUED"},
		{"DEL redlockd:fence:{k}", "-" + msgReservedKey},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
		{"GET free", "nil"},
	} {
		if got := f.do(strings.Fields(step[0])...); got != step[1] {
			t.Fatalf("%s = %q, want %q", step[0], got, step[1])
		}
	}
}
