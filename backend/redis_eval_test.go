package backend

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// markedEvalCmd is nodetest.EvalCmd with a mark, as the quorum sends a writing script.
func markedEvalCmd(mark, src string, keys []string, args ...string) quorum.Cmd {
	c := nodetest.EvalCmd(src, keys, args...)
	c.Mark, c.TTL, c.Limit = mark, time.Minute, 30*time.Second
	return c
}

func undoCmd(mark string, keys ...string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.UndoEval, Keys: keys, Mark: mark, TTL: time.Minute}
}

func mustValue(t *testing.T, rep quorum.Reply) quorum.Value {
	t.Helper()
	if rep.Err != nil || !rep.OK || rep.Value == nil {
		t.Fatalf("reply %+v", rep)
	}
	return *rep.Value
}

// TestRedisEvalValues: every type a script can answer with, nested, as a
// plain and as a marked run; a script's own error is its value.
func TestRedisEvalValues(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	i := func(n int64) quorum.Value { return quorum.Value{Kind: quorum.IntValue, Int: n} }
	b := func(s string) quorum.Value { return quorum.Value{Kind: quorum.BulkValue, Str: s} }
	null := quorum.Value{Kind: quorum.NilValue}
	arr := func(e ...quorum.Value) quorum.Value { return quorum.Value{Kind: quorum.ArrayValue, Elems: e} }
	cases := []struct {
		src  string
		want quorum.Value
	}{
		{`return 7`, i(7)},
		{`return -3.9`, i(-3)},
		{`return "a\r\nb"`, b("a\r\nb")},
		{`return false`, null},
		{`return nil`, null},
		{`return true`, i(1)},
		{`return redis.status_reply("FINE")`, quorum.Value{Kind: quorum.StatusValue, Str: "FINE"}},
		{`return redis.error_reply("MYERR bad thing")`, quorum.Value{Kind: quorum.ErrorValue, Str: "MYERR bad thing"}},
		{`return {}`, arr()},
		{`return {1, "x", {2, {"y"}}, false, 3}`, arr(i(1), b("x"), arr(i(2), arr(b("y"))), null, i(3))},
		{`return {redis.call("set", KEYS[1], "v"), redis.call("get", KEYS[1])}`, arr(quorum.Value{Kind: quorum.StatusValue, Str: "OK"}, b("v"))},
	}
	for _, tc := range cases {
		for _, cmd := range []quorum.Cmd{nodetest.EvalCmd(tc.src, []string{"k"}), markedEvalCmd("redlockd:script:{k}:m", tc.src, []string{"k"})} {
			got := mustValue(t, quorum.Call(t.Context(), r, cmd))
			if !quorum.EqualValues(got, tc.want) {
				t.Errorf("%s (mark %q) = %+v; want %+v", tc.src, cmd.Mark, got, tc.want)
			}
		}
	}
	// An error a command raised inside the script is the script's reply.
	if err := srv.Client().Set(t.Context(), "s", "text", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got := mustValue(t, quorum.Call(t.Context(), r, nodetest.EvalCmd(`return redis.call("incr", KEYS[1])`, []string{"s"})))
	if got.Kind != quorum.ErrorValue || got.Str == "" {
		t.Fatalf("INCR of a string = %+v; want an error value", got)
	}
}

// TestRedisEvalNodeFailure: an error of the server's state (here a
// read-only replica's) is the node's failure, not the script's reply.
func TestRedisEvalNodeFailure(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port()))
	r := newTestRedis(t, replica.Addr())
	for _, cmd := range []quorum.Cmd{nodetest.EvalCmd(`return redis.call("set", KEYS[1], "v")`, []string{"k"}),
		markedEvalCmd("redlockd:script:{k}:m", `return redis.call("set", KEYS[1], "v")`, []string{"k"})} {
		rep := quorum.Call(t.Context(), r, cmd)
		if rep.Err == nil || !errors.Is(rep.Err, ServerError{Code: "READONLY"}) && !isNodeFailure(rep.Err) {
			t.Fatalf("a write on a replica (mark %q) = %+v; want a node failure", cmd.Mark, rep)
		}
	}
}

// TestRedisEvalNoScript: after SCRIPT FLUSH on the server, a client's
// script and the marked step are sent again with their text.
func TestRedisEvalNoScript(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	src := `redis.call("set", KEYS[1], ARGV[1]) return ARGV[1]`
	for i, cmd := range []quorum.Cmd{nodetest.EvalCmd(src, []string{"k"}, "a"), markedEvalCmd("redlockd:script:{k}:m2", src, []string{"k"}, "b")} {
		if err := c.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		got := mustValue(t, quorum.Call(t.Context(), r, cmd))
		if got.Kind != quorum.BulkValue || got.Str != cmd.Args[0] {
			t.Fatalf("run %d after SCRIPT FLUSH = %+v", i, got)
		}
		if ok, err := c.ScriptExists(t.Context(), cmd.Script.SHA).Result(); err != nil || !ok[0] {
			t.Fatalf("script not cached again: %v, %v", ok, err)
		}
		if v, _ := c.Get(t.Context(), "k").Result(); v != cmd.Args[0] {
			t.Fatalf("k = %q after run %d", v, i)
		}
	}
	// The resent step kept one snapshot: the undo puts back "a".
	if rep := quorum.Call(t.Context(), r, undoCmd("redlockd:script:{k}:m2", "k")); rep.Err != nil || !rep.OK {
		t.Fatalf("undo = %+v", rep)
	}
	if v, _ := c.Get(t.Context(), "k").Result(); v != "a" {
		t.Fatalf("k = %q after the undo, want a", v)
	}
}

const delScript = `return redis.call("del", KEYS[1])`

// TestRedisUndoEvalRestores: a key the script deleted comes back with its
// value and its very expiry; a key it created goes; a key changed since
// the script stays as it is; a second undo changes nothing.
func TestRedisUndoEvalRestores(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ctx := t.Context()
	if err := c.Set(ctx, "old", "tok", 50*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	exp, _ := c.PExpireTime(ctx, "old").Result()
	mk := "redlockd:script:{old}:1"
	if got := mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk, delScript, []string{"old"}))); got.Int != 1 {
		t.Fatalf("del = %+v", got)
	}
	rep := quorum.Call(ctx, r, undoCmd(mk, "old"))
	if rep.Err != nil || !rep.OK {
		t.Fatalf("undo = %+v", rep)
	}
	if v, _ := c.Get(ctx, "old").Result(); v != "tok" {
		t.Fatalf("old = %q after the undo", v)
	}
	if e, _ := c.PExpireTime(ctx, "old").Result(); e != exp {
		t.Fatalf("old expires at %v after the undo, was %v", e, exp)
	}
	if rep := quorum.Call(ctx, r, undoCmd(mk, "old")); rep.Err != nil || rep.OK {
		t.Fatalf("second undo = %+v; want nothing put back", rep)
	}
	// Created, then changed by another client: left alone.
	mk2 := "redlockd:script:{new}:2"
	set := `return redis.call("set", KEYS[1], ARGV[1], "px", ARGV[2])`
	mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk2, set, []string{"new"}, "mine", "60000")))
	if err := c.Set(ctx, "new", "theirs", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if rep := quorum.Call(ctx, r, undoCmd(mk2, "new")); rep.Err != nil || rep.OK {
		t.Fatalf("undo of a changed key = %+v", rep)
	}
	if v, _ := c.Get(ctx, "new").Result(); v != "theirs" {
		t.Fatalf("new = %q; the undo touched a key changed since", v)
	}
	// Created, unchanged since: deleted; the mark is left as "undone" only.
	mk3 := "redlockd:script:{fresh}:3"
	mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk3, set, []string{"fresh"}, "mine", "60000")))
	if rep := quorum.Call(ctx, r, undoCmd(mk3, "fresh")); rep.Err != nil || !rep.OK {
		t.Fatalf("undo of a created key = %+v", rep)
	}
	if n, err := c.Exists(ctx, "fresh").Result(); err != nil || n != 0 {
		t.Fatalf("fresh is still there after the undo (read: %v)", err)
	}
	if f, _ := c.HKeys(ctx, mk3).Result(); len(f) != 1 || f[0] != "x" {
		t.Fatalf("mark after the undo has fields %v", f)
	}
}

// TestRedisUndoEvalExpiredBefore: a key whose old expiry passed since the
// script deleted it is not brought back.
func TestRedisUndoEvalExpiredBefore(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ctx := t.Context()
	if err := c.Set(ctx, "k", "tok", 500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	mk := "redlockd:script:{k}:1"
	if got := mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk, delScript, []string{"k"}))); got.Int != 1 {
		t.Fatalf("del = %+v; the key expired before the script (a loaded machine?)", got)
	}
	exp, _ := c.HGet(ctx, mk, "be2").Int64()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if now, _ := c.Time(ctx).Result(); now.UnixMilli() > exp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old expiry never passed")
		}
	}
	if rep := quorum.Call(ctx, r, undoCmd(mk, "k")); rep.Err != nil || !rep.OK {
		t.Fatalf("undo = %+v", rep)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("a key whose expiry had passed was restored (read: %v)", err)
	}
}

// TestRedisUndoEvalBeforeArrival: an undo that overtakes its round marks
// it undone, and the round then takes itself back.
func TestRedisUndoEvalBeforeArrival(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ctx := t.Context()
	mk := "redlockd:script:{k}:1"
	if rep := quorum.Call(ctx, r, undoCmd(mk, "k")); rep.Err != nil || rep.OK {
		t.Fatalf("undo before the round = %+v", rep)
	}
	set := `return redis.call("set", KEYS[1], "late", "px", 60000)`
	mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk, set, []string{"k"})))
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("a round undone before it arrived left its key (read: %v)", err)
	}
}

// TestRedisEvalSessionTTL: a key the script leaves without an expiry gets
// the limit; a key with one keeps it; the reply's TTL is the longest.
func TestRedisEvalSessionTTL(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ctx := t.Context()
	src := `redis.call("set", KEYS[1], "a") redis.call("set", KEYS[2], "b", "px", 90000) return 1`
	rep := quorum.Call(ctx, r, markedEvalCmd("redlockd:script:{a}:1", src, []string{"a", "b"}))
	mustValue(t, rep)
	if p, _ := c.PTTL(ctx, "a").Result(); p <= 0 || p > 30*time.Second {
		t.Fatalf("a's ttl = %v; want the limit, 30s", p)
	}
	if p, _ := c.PTTL(ctx, "b").Result(); p <= 30*time.Second {
		t.Fatalf("b's ttl = %v; want its own 90s", p)
	}
	if rep.TTL <= 30*time.Second || rep.TTL > 90*time.Second {
		t.Fatalf("reply TTL = %v; want b's", rep.TTL)
	}
}

// TestRedisEvalHashes: a Redisson-like reentrant lock on a hash, taken by
// a script and undone to what it was: the first hold goes, a second hold
// comes back to one.
func TestRedisEvalHashes(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	ctx := t.Context()
	acquire := `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	hold := func(mk string) quorum.Value {
		return mustValue(t, quorum.Call(ctx, r, markedEvalCmd(mk, acquire, []string{"h"}, "60000", "id:1")))
	}
	if v := hold("redlockd:script:{h}:1"); v.Kind != quorum.NilValue {
		t.Fatalf("first hold = %+v", v)
	}
	if v := hold("redlockd:script:{h}:2"); v.Kind != quorum.NilValue {
		t.Fatalf("second hold = %+v", v)
	}
	if rep := quorum.Call(ctx, r, undoCmd("redlockd:script:{h}:2", "h")); rep.Err != nil || !rep.OK {
		t.Fatalf("undo = %+v", rep)
	}
	if n, _ := c.HGet(ctx, "h", "id:1").Int(); n != 1 {
		t.Fatalf("holds after undoing the second = %d, want 1", n)
	}
	if p, _ := c.PTTL(ctx, "h").Result(); p <= 0 {
		t.Fatalf("h lost its expiry: %v", p)
	}
	if rep := quorum.Call(ctx, r, undoCmd("redlockd:script:{h}:1", "h")); rep.Err != nil {
		t.Fatalf("undo of the first = %+v", rep)
	}
	// Undone in reverse order, the first round finds the key as it left
	// it (the second undo restored that very state): the lock is gone.
	if n, err := c.Exists(ctx, "h").Result(); err != nil || n != 0 {
		t.Fatalf("h is still there after both rounds were undone (read: %v)", err)
	}
}

// TestRedisEvalRESP3: a script wanted in RESP3 answers with RESP3's types,
// plain, marked and after NOSCRIPT; the commands sent right behind it on
// the same connection are answered in RESP2 and paired with their own
// replies.
func TestRedisEvalRESP3(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	const src = `redis.call("set", KEYS[1], "v", "px", 60000) return {map={a={double=1.5}}}`
	want := quorum.Value{Kind: quorum.MapValue, Elems: []quorum.Value{
		{Kind: quorum.BulkValue, Str: "a"}, {Kind: quorum.DoubleValue, Str: "1.5"}}}
	flat := quorum.Value{Kind: quorum.ArrayValue, Elems: []quorum.Value{
		{Kind: quorum.BulkValue, Str: "a"}, {Kind: quorum.BulkValue, Str: "1.5"}}}
	for _, flush := range []bool{false, true} {
		for _, cmd := range []quorum.Cmd{nodetest.EvalCmd(src, []string{"k"}), markedEvalCmd("redlockd:script:{k}:m3", src, []string{"k"})} {
			// Loaded, the script keeps its place among the commands on
			// the key; flushed, it is sent again behind them (NOSCRIPT).
			setup := srv.Client().ScriptLoad(t.Context(), src).Err()
			if flush {
				setup = srv.Client().ScriptFlush(t.Context()).Err()
			}
			if setup != nil {
				t.Fatal(setup)
			}
			three := cmd
			s := *cmd.Script
			s.RESP3 = true
			three.Script = &s
			got := make(chan quorum.Reply, 3)
			dl := time.Now().Add(5 * time.Second)
			r.Do(dl, three, quorum.ReceiverFunc(func(rep quorum.Reply) { got <- rep }))
			gets := make(chan quorum.Reply, 1)
			r.Do(dl, quorum.Cmd{Kind: quorum.Get, Key: "k"}, quorum.ReceiverFunc(func(rep quorum.Reply) { gets <- rep }))
			r.Do(dl, nodetest.EvalCmd(src, []string{"k"}), quorum.ReceiverFunc(func(rep quorum.Reply) { got <- rep }))
			if v := mustValue(t, <-got); !quorum.EqualValues(v, want) {
				t.Errorf("RESP3 (mark %q, flushed %v) = %+v; want %+v", cmd.Mark, flush, v, want)
			}
			if rep := <-gets; rep.Err != nil || !flush && rep.Token != "v" {
				t.Errorf("GET behind it = %+v; want v", rep)
			}
			if v := mustValue(t, <-got); !quorum.EqualValues(v, flat) {
				t.Errorf("RESP2 behind it = %+v; want %+v", v, flat)
			}
		}
	}
}
