package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// effectEngine is a pair of nodes of one engine, the way a write reads on
// each, and how many undo records a node keeps.
type effectEngine struct {
	name    string
	nodes   [2]quorum.Node
	records func(i int) int
}

func effectEngines(t *testing.T) []effectEngine {
	t.Helper()
	srvs := redistest.StartN(t, 2)
	reds := [2]*backend.Redis{newTestRedis(t, srvs[0].Addr()), newTestRedis(t, srvs[1].Addr())}
	m0, _ := newTestMemory(t)
	m1, clock := newTestMemory(t)
	clock.advance(3 * time.Millisecond) // the nodes' clocks differ
	mems := [2]*Memory{m0, m1}
	return []effectEngine{
		{"redis", [2]quorum.Node{reds[0], reds[1]}, func(i int) int {
			// A record that outlives the margin: the mark of a run that
			// changed nothing goes within it.
			c := srvs[i].Client()
			keys, err := c.Keys(context.Background(), "redlockd:script:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, k := range keys {
				if c.PTTL(context.Background(), k).Val() > backend.EvalMarkSlack {
					n++
				}
			}
			return n
		}},
		{"memory", [2]quorum.Node{m0, m1}, func(i int) int {
			mems[i].mu.Lock()
			defer mems[i].mu.Unlock()
			return len(mems[i].scripts.records)
		}},
	}
}

// effectCmd is a marked Eval as the quorum sends it, with max-ttl 5s.
func effectCmd(mark, src string, keys []string, args ...string) quorum.Cmd {
	c := nodetest.EvalCmd(src, keys, args...)
	c.Mark, c.TTL, c.Limit, c.Max = "redlockd:script:{k}:"+mark, time.Hour, 3*time.Second, 5*time.Second
	return c
}

// TestEvalEffect: what a marked run says it changed, on Redis and on the
// in-memory node alike: equal for equal changes whatever the node's clock
// or the key's history, "" for none (and no record then), the keys whose
// expiry the script set, and a run past max-ttl taken back.
func TestEvalEffect(t *testing.T) {
	const (
		setNX   = `return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`
		hashPX  = `redis.call('hincrby', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], ARGV[2]) return nil`
		refresh = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`
		plain   = `return redis.call('set', KEYS[1], ARGV[1])`
	)
	k := []string{"k"}
	for _, e := range effectEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			run := func(i int, cmd quorum.Cmd) quorum.Reply {
				t.Helper()
				rep := quorum.Call(t.Context(), e.nodes[i], cmd)
				if rep.Err != nil || rep.Value == nil {
					t.Fatalf("node %d: %+v", i, rep)
				}
				return rep
			}
			forget := func(i int, mark string) bool {
				t.Helper()
				rep := quorum.Call(t.Context(), e.nodes[i], quorum.Cmd{Kind: quorum.ForgetEval, Keys: k, Mark: "redlockd:script:{k}:" + mark})
				if rep.Err != nil {
					t.Fatalf("ForgetEval on node %d: %v", i, rep.Err)
				}
				return rep.OK
			}
			both := func(mark, src string, args ...string) [2]quorum.Reply {
				t.Helper()
				return [2]quorum.Reply{run(0, effectCmd(mark, src, k, args...)), run(1, effectCmd(mark, src, k, args...))}
			}
			clear := func() {
				t.Helper()
				for i := range e.nodes {
					run(i, effectCmd("clear", `return redis.call('del', KEYS[1])`, k))
					forget(i, "clear")
				}
			}

			r := both("a", setNX, "tok", "2000")
			if r[0].Effect == "" || r[0].Effect != r[1].Effect || r[0].Each[0] != true {
				t.Fatalf("SET NX PX on two empty nodes: effects %q, %q, timed %v", r[0].Effect, r[1].Effect, r[0].Each)
			}
			r2 := both("b", refresh, "tok", "4000")
			// The same state as the grant left: a change to "held by tok".
			if r2[0].Effect == "" || r2[0].Effect != r2[1].Effect || r2[0].Effect != r[0].Effect || !r2[0].Each[0] {
				t.Fatalf("a refresh on both: effects %q, %q (the grant's %q), timed %v", r2[0].Effect, r2[1].Effect, r[0].Effect, r2[0].Each)
			}
			nothing := run(0, effectCmd("c", setNX, k, "other", "2000"))
			if nothing.Effect != "" || len(nothing.Each) != 1 || nothing.Each[0] {
				t.Fatalf("a refused SET NX: effect %q, timed %v", nothing.Effect, nothing.Each)
			}
			if n := e.records(0); n != 2 {
				t.Fatalf("node 0 keeps %d records; want the two runs that changed something", n)
			}
			for _, m := range []string{"a", "b"} {
				if !forget(0, m) {
					t.Fatalf("ForgetEval of %s found no record", m)
				}
			}
			if n := e.records(0); n != 0 {
				t.Fatalf("node 0 keeps %d records after ForgetEval", n)
			}

			// A hash of equal fields, whatever its history, is one change.
			clear()
			run(1, effectCmd("h0", `redis.call('hset', KEYS[1], 'z', 1) return redis.call('pexpire', KEYS[1], 2000)`, k))
			h := both("h", hashPX, "id:1", "2000")
			if h[0].Effect == h[1].Effect {
				t.Fatalf("a fresh hash and one with another field made the same change %q", h[0].Effect)
			}
			run(1, effectCmd("h1", `return redis.call('hdel', KEYS[1], 'z')`, k))
			clear()
			run(1, effectCmd("h2", `redis.call('hset', KEYS[1], 'z', 1) redis.call('hset', KEYS[1], 'id:1', 1) redis.call('hdel', KEYS[1], 'z') return redis.call('pexpire', KEYS[1], 9000)`, k))
			run(0, effectCmd("h3", `redis.call('hset', KEYS[1], 'id:1', 1) return redis.call('pexpire', KEYS[1], 9000)`, k))
			h = both("h4", hashPX, "id:1", "2000")
			if h[0].Effect == "" || h[0].Effect != h[1].Effect {
				t.Fatalf("equal hashes of different histories: effects %q, %q", h[0].Effect, h[1].Effect)
			}

			// The session ttl a key left without expiry gets is no expiry
			// of the script's.
			clear()
			p := run(0, effectCmd("p", plain, k, "v"))
			if p.Effect == "" || p.Each[0] {
				t.Fatalf("SET without expiry: effect %q, timed %v", p.Effect, p.Each)
			}

			// Past max-ttl: the run is taken back, the reply is the error.
			clear()
			run(0, effectCmd("o0", `return redis.call('set', KEYS[1], 'old', 'PX', 3000)`, k))
			kept := e.records(0)
			for _, src := range []string{`return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])`, `return redis.call('pexpire', KEYS[1], ARGV[2])`} {
				o := run(0, effectCmd("o", src, k, "tok", "60000"))
				if n := e.records(0); n != kept {
					t.Fatalf("a run taken back left a record: %d, %d before", n, kept)
				}
				if o.Value.Kind != quorum.ErrorValue || o.Value.Str != quorum.MsgTTLExceedsMax || o.Effect != "" || o.TTL != 0 {
					t.Fatalf("%s of 60s with max-ttl 5s: %+v %+v", src, o, *o.Value)
				}
				g := quorum.Call(t.Context(), e.nodes[0], quorum.Cmd{Kind: quorum.Get, Key: "k"})
				if g.Token != "old" || g.TTL <= 0 || g.TTL > 3*time.Second {
					t.Fatalf("after the refused run k = %+v", g)
				}
			}
		})
	}
}
