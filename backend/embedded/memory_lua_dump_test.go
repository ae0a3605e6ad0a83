package embedded

import (
	"testing"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// luaKindCases run as the proxy's own scripts run (the commands only they
// may call: DUMP, RESTORE, TIME): a dump is compared by equality, never
// by its bytes, which are the node's own encoding.
var luaKindCases = []luaCase{
	{name: "DUMP absent", script: `return {redis.call('dump', KEYS[1]) == false, redis.call('exists', KEYS[1])}`, keys: k1},
	{name: "DUMP of equal values", setup: `redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'a', 'PX', 9000)`,
		script: `local a, b = redis.call('dump', KEYS[1]), redis.call('dump', KEYS[2])
redis.call('set', KEYS[2], 'b')
return {a == b, a == redis.call('dump', KEYS[2]), type(a)}`, keys: k12},
	{name: "DUMP of hashes", setup: `redis.call('hset', KEYS[1], 'f', 'v', 'g', 'w'); redis.call('hset', KEYS[2], 'f', 'v', 'g', 'w')`,
		script: `local a = redis.call('dump', KEYS[1])
local same = a == redis.call('dump', KEYS[2])
redis.call('hset', KEYS[2], 'g', 'x')
return {same, a == redis.call('dump', KEYS[2]), a == redis.call('dump', KEYS[1])}`, keys: k12},
	{name: "RESTORE a string with a ttl", setup: `redis.call('set', KEYS[1], 'a')`,
		script: `local d = redis.call('dump', KEYS[1])
return {redis.call('restore', KEYS[2], 5000, d), redis.call('get', KEYS[2]), redis.call('pttl', KEYS[2]) > 4000, redis.call('dump', KEYS[2]) == d}`, keys: k12},
	{name: "RESTORE a hash keeps its order", setup: `redis.call('hset', KEYS[1], 'z', '1', 'a', '2', 'm', '3')`,
		script: `local d = redis.call('dump', KEYS[1])
redis.call('del', KEYS[1])
return {redis.call('restore', KEYS[1], 0, d), redis.call('hgetall', KEYS[1]), redis.call('pttl', KEYS[1]), redis.call('type', KEYS[1])}`, keys: k1},
	{name: "RESTORE over a key", setup: `redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'b')`,
		script: `local d = redis.call('dump', KEYS[1])
local busy = redis.pcall('restore', KEYS[2], 0, d)
return {busy, redis.call('get', KEYS[2]), redis.call('restore', KEYS[2], 0, d, 'REPLACE'), redis.call('get', KEYS[2]), redis.call('pttl', KEYS[2])}`, keys: k12},
	{name: "RESTORE ABSTTL", setup: `redis.call('set', KEYS[1], 'a', 'PX', 60000)`,
		script: `local d, at = redis.call('dump', KEYS[1]), redis.call('pexpiretime', KEYS[1])
redis.call('del', KEYS[1])
return {redis.call('restore', KEYS[1], at, d, 'ABSTTL'), redis.call('pexpiretime', KEYS[1]) == at}`, keys: k1},
	{name: "RESTORE ABSTTL in the past", setup: `redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'b')`,
		script: `local d = redis.call('dump', KEYS[1])
return {redis.call('restore', KEYS[2], 1000, d, 'REPLACE', 'ABSTTL'), redis.call('exists', KEYS[2]),
  redis.call('restore', KEYS[1], 1000, d, 'ABSTTL', 'REPLACE'), redis.call('exists', KEYS[1])}`, keys: k12},
	{name: "RESTORE refusals", setup: `redis.call('set', KEYS[1], 'a')`,
		script: `local d = redis.call('dump', KEYS[1])
return {redis.pcall('restore', KEYS[2], -1, d), redis.pcall('restore', KEYS[2], 'x', d),
  redis.pcall('restore', KEYS[2], 0, 'not a dump'), redis.pcall('restore', KEYS[2], 0, d, 'ONCE'),
  redis.pcall('restore', KEYS[2], 0, d, 'IDLETIME'), redis.call('restore', KEYS[2], 0, d, 'IDLETIME', 10), redis.call('exists', KEYS[2])}`, keys: k12},
	{name: "TIME", script: `local t = redis.call('time')
return {#t, type(t[1]), type(t[2]), tonumber(t[1]) > 1700000000, tonumber(t[2]) < 1000000}`},
	{name: "TYPE as a table", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return {redis.call('type', KEYS[1])['ok'], redis.call('type', KEYS[2])['ok']}`, keys: k12},
	{name: "table.sort and sha1hex", script: `local t = {'b', 'c', 'a'}
table.sort(t, function(x, y) return x < y end)
return {table.concat(t), redis.sha1hex(table.concat(t, '|'))}`},
}

// TestMemoryKindCommandsAsRedis: the commands the proxy's own scripts
// call answer on the node as on a redis-server, and leave the keys alike.
func TestMemoryKindCommandsAsRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	for _, tc := range luaKindCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			m := New("mem")
			t.Cleanup(func() { _ = m.Close() })
			if tc.setup != "" {
				if err := rdb.Eval(ctx, tc.setup, tc.keys).Err(); err != nil && err.Error() != "redis: nil" {
					t.Fatalf("setup on redis: %v", err)
				}
				if rep := quorum.Call(ctx, m, nodetest.EvalCmd(tc.setup, tc.keys)); rep.Err != nil {
					t.Fatalf("setup on the node: %+v", rep)
				}
			}
			res, err := rdb.Eval(ctx, tc.script, tc.keys, strArgs(tc.args)...).Result()
			want := fromGoRedis(res, err)
			got := runAsKind(t, m, tc.script, tc.keys, tc.args)
			if !sameValue(got, want) {
				t.Errorf("node replied %s, redis %s", showValue(got), showValue(want))
			}
			for _, k := range tc.keys {
				compareKey(t, rdb, m, 0, k)
			}
		})
	}
}

// runAsKind runs src on m as a kind's script runs: under the node's lock,
// with the commands only the proxy's own scripts may call.
func runAsKind(t *testing.T, m *Memory, src string, keys, args []string) quorum.Value {
	t.Helper()
	proto, err := compileLua(src)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &memOp{m: m, c: memCmd{quorum.Cmd{Kind: quorum.Get}}, now: m.now()}
	v, _ := (&luaRun{s: s, kind: true}).run(proto, keys, args)
	return v
}
