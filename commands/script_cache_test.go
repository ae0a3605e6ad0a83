package commands

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redlockd/redlockd/commands/scriptcheck"
)

// countingCache is a cache whose check refuses bodies starting with "bad"
// and counts its calls.
func countingCache(max, maxB int) (*scriptCache, *atomic.Int64) {
	var n atomic.Int64
	c := newScriptCache()
	c.max, c.maxB = max, maxB
	c.check = func(body string) (scriptcheck.Info, error) {
		n.Add(1)
		if len(body) >= 3 && body[:3] == "bad" {
			return scriptcheck.Info{}, errors.New("redis.call('zadd') is not a lock command")
		}
		return scriptcheck.Info{Writes: true, DB: -1}, nil
	}
	return c, &n
}

// TestScriptCacheChecksOnce: a body, admitted or refused, is checked once;
// a refused one is kept as refused, without its text.
func TestScriptCacheChecksOnce(t *testing.T) {
	c, n := countingCache(10, 1<<20)
	for range 3 {
		if e := c.add(sha1Hex("bad body"), "bad body"); e.err == nil || e.script != nil {
			t.Fatalf("refused body cached as %+v", e)
		}
		if e := c.add(sha1Hex("return 1"), "return 1"); e.err != nil || e.script.Src != "return 1" {
			t.Fatalf("admitted body cached as %+v", e)
		}
	}
	if n.Load() != 2 {
		t.Fatalf("%d checks for two bodies", n.Load())
	}
	if c.has(sha1Hex("bad body")) || !c.has(sha1Hex("return 1")) {
		t.Fatal("has: a refused body runs, or an admitted one does not")
	}
}

// TestScriptCacheBounded: the least recently used body goes first, by
// count and by bytes.
func TestScriptCacheBounded(t *testing.T) {
	c, _ := countingCache(3, 1<<20)
	body := func(i int) string { return "return " + strconv.Itoa(i) }
	for i := range 3 {
		c.add(sha1Hex(body(i)), body(i))
	}
	c.get(sha1Hex(body(0))) // used: 1 is now the oldest
	c.add(sha1Hex(body(3)), body(3))
	for i, want := range []bool{true, false, true, true} {
		if c.has(sha1Hex(body(i))) != want {
			t.Fatalf("body %d cached %v, want %v", i, !want, want)
		}
	}
	c, _ = countingCache(100, 200)
	big := func(i int) string { return strconv.Itoa(i) + string(make([]byte, 100)) }
	for i := range 3 {
		c.add(sha1Hex(big(i)), big(i))
	}
	if c.has(sha1Hex(big(0))) || !c.has(sha1Hex(big(2))) || c.bytes > 200 {
		t.Fatalf("byte bound not kept: %d bytes", c.bytes)
	}
	c.flush()
	if c.has(sha1Hex(big(2))) || c.bytes != 0 || c.ll.Len() != 0 {
		t.Fatal("flush left bodies")
	}
}

// TestRefusedScriptReplies: a body the check refuses gets the check's
// error from EVAL, SCRIPT LOAD and EVALSHA, and does not exist.
func TestRefusedScriptReplies(t *testing.T) {
	f := newFixture(t, Options{})
	c, n := countingCache(10, 1<<20)
	f.h.scripts = c
	const bad = "bad: redis.call('zadd', KEYS[1], 1, ARGV[1])"
	want := "-ERR redis.call('zadd') is not a lock command"
	for _, call := range [][]string{{"EVAL", bad, "1", "k", "a"}, {"SCRIPT", "LOAD", bad}, {"EVALSHA", sha1Hex(bad), "1", "k", "a"}, {"EVAL_RO", bad, "0"}} {
		if got := f.do(call...); got != want {
			t.Errorf("%s = %s; want %s", call[0], got, want)
		}
	}
	if got := f.do("SCRIPT", "EXISTS", sha1Hex(bad)); got != "[:0]" {
		t.Fatalf("SCRIPT EXISTS of a refused body = %s", got)
	}
	if n.Load() != 1 {
		t.Fatalf("the refused body was checked %d times", n.Load())
	}
}
