package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
	"github.com/redlockd/redlockd/testkit/resptest"
)

// reservedReply is the refusal of a reserved key (docs/commands.md), as it goes over the wire.
const reservedReply = "-ERR key is in redlockd's reserved namespace"

// fenceOnce takes key with FENCE, releases it, and returns the fence.
func fenceOnce(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	ctx := ctxT(t)
	res, err := c.Do(ctx, "LOCK", key, 10000, "FENCE").Slice()
	if err != nil || len(res) != 3 {
		t.Fatalf("LOCK %s FENCE = %v, %v; want [token validity fence]", key, res, err)
	}
	tok, _ := res[0].(string)
	f, ok := res[2].(int64)
	if !ok {
		t.Fatalf("LOCK FENCE fence %T %v, want an integer", res[2], res[2])
	}
	if n, err := c.Do(ctx, "UNLOCK", key, tok).Int(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %d, %v", n, err)
	}
	return f
}

// TestReservedFenceKeyRefused: a client of a second proxy tries to raise,
// delete and spoil K's fence counter and to write its hold count and wait
// mark. Each write gets the refusal byte for byte, the counters on the
// backends stay as the last FENCE left them, and every later fence is
// greater than the one before.
func TestReservedFenceKeyRefused(t *testing.T) {
	backends := redistest.StartN(t, 3)
	a := redlocktest.StartOver(t, backends, redlocktest.Options{})
	b := redlocktest.StartOver(t, backends, redlocktest.Options{})
	ca, rb := a.Client(t, 2), resptest.Dial(t, b.Addr)
	fk := quorum.FenceKey("K")
	last := fenceOnce(t, ca, "K")
	for _, write := range [][]string{
		{"SET", fk, "99999999999999999", "PX", "1000"},
		{"DEL", fk},
		{"SET", fk, "not-a-number"},
		{"PEXPIRE", fk, "1"},
		{"SET", quorum.HoldsKey("K"), "5", "PX", "10000"},
		{"SET", "redlockd:wait:{K}", "1", "PX", "10000"},
		{"EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
			"1", fk, strconv.FormatInt(last, 10)},
	} {
		if got := rb.Line(write...); got != reservedReply {
			t.Fatalf("%q = %q, want %q", write, got, reservedReply)
		}
		if vals := a.BackendValues(t, fk); redlocktest.Count(vals, strconv.FormatInt(last, 10)) != 3 {
			t.Fatalf("after %q the counters are %v, want %d on every backend", write, vals, last)
		}
		f := fenceOnce(t, ca, "K")
		if f <= last || f > quorum.MaxFence {
			t.Fatalf("after %q: fence %d, want above %d (and at most 2^53)", write, f, last)
		}
		last = f
	}
	for _, k := range []string{quorum.HoldsKey("K"), "redlockd:wait:{K}"} {
		if vals := a.BackendValues(t, k); redlocktest.Count(vals, "<nil>") != 3 {
			t.Errorf("%s on the backends: %v, want absent", k, vals)
		}
	}
}

// TestReservedKeyInPipeline: a reserved key in the middle of a pipelined
// batch is refused on its own; the commands around it run.
func TestReservedKeyInPipeline(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	rc := resptest.Dial(t, in.Addr)
	rc.Send("LOCK", "p", "10000", "TOKEN", "t")
	rc.Send("SET", "redlockd:fence:{p}", "9", "PX", "1000")
	rc.Send("GET", "p")
	want := [][]string{{"*2", "t", ":"}, {reservedReply}, {"t"}}
	for i, w := range want {
		got := readReply(t, rc)
		if len(got) != len(w) {
			t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
		for j := range w {
			if got[j] != w[j] && !(w[j] == ":" && len(got[j]) > 1 && got[j][0] == ':') {
				t.Fatalf("reply %d = %q, want %q", i, got, w)
			}
		}
	}
	if vals := in.BackendValues(t, quorum.FenceKey("p")); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("fence counter on the backends: %v, want absent", vals)
	}
}

// TestFenceCorruptCounterOnOneBackend: a counter spoilt directly on one
// backend (a client can no longer write it) makes that backend's read an
// error: FENCE goes on with the other two, each fence above the last and
// within 2^53, and the raise puts a sound counter back.
func TestFenceCorruptCounterOnOneBackend(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	fk := quorum.FenceKey("K")
	last := fenceOnce(t, c, "K")
	for _, bad := range []string{"99999999999999999", "not-a-number", "1e30", "0x7fffffffffffffff", "-5", " 12", "9007199254740993"} {
		if err := in.Backends[0].Client().Set(context.Background(), fk, bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		f := fenceOnce(t, c, "K")
		if f <= last || f > quorum.MaxFence {
			t.Fatalf("with %q on one backend: fence %d, want above %d and at most 2^53", bad, f, last)
		}
		if vals := in.BackendValues(t, fk); redlocktest.Count(vals, strconv.FormatInt(f, 10)) != 3 {
			t.Fatalf("with %q on one backend, after FENCE the counters are %v, want %d everywhere", bad, vals, f)
		}
		last = f
	}
}

// TestFenceCorruptCounterOnMajority: with spoilt counters on two of three
// backends no fence can be trusted: LOCK … FENCE answers NOQUORUM naming
// the bad counters, leaves the key free, and hands out nothing.
func TestFenceCorruptCounterOnMajority(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	fk := quorum.FenceKey("K")
	last := fenceOnce(t, c, "K")
	for _, s := range in.Backends[:2] {
		if err := s.Client().Set(context.Background(), fk, "99999999999999999", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Do(ctxT(t), "LOCK", "K", 10000, "FENCE").Result()
	if err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM ") ||
		!strings.Contains(err.Error(), "malformed fence counter") {
		t.Fatalf("LOCK FENCE over two spoilt counters = %v, %v; want NOQUORUM naming them", res, err)
	}
	if vals := in.BackendValues(t, "K"); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("after the refused FENCE the lock is on the backends: %v", vals)
	}
	if err := in.Backends[1].Client().Set(context.Background(), fk, strconv.FormatInt(last, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if f := fenceOnce(t, c, "K"); f <= last || f > quorum.MaxFence {
		t.Fatalf("fence with one spoilt counter left = %d, want above %d and at most 2^53", f, last)
	}
}
