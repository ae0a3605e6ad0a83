package embedded

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// luaCase is one script run on a real redis-server and on an in-memory
// node, after the same setup script: their replies must agree, and so
// must the keys afterwards. status: the reply is a status (go-redis reads
// one as a string), checked on the node's side.
type luaCase struct {
	name   string
	setup  string
	script string
	keys   []string
	args   []string
	status bool
}

var (
	k1   = []string{"{t}k1"}
	k12  = []string{"{t}k1", "{t}k2"}
	far  = "4102444800000" // 2100-01-01 in unix ms
	farS = "4102444800"
)

var luaStringCases = []luaCase{
	{name: "GET absent", script: `return redis.call('get', KEYS[1])`, keys: k1},
	{name: "SET then GET", script: `redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])`, keys: k1, args: []string{"v"}},
	{name: "SET status", script: `return redis.call('set', KEYS[1], 'v')`, keys: k1, status: true},
	{name: "SET NX held", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.call('set', KEYS[1], 'b', 'NX')`, keys: k1},
	{name: "SET XX absent", script: `return redis.call('set', KEYS[1], 'b', 'XX')`, keys: k1},
	{name: "SET XX held", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.call('set', KEYS[1], 'b', 'XX')`, keys: k1, status: true},
	{name: "SET NX PX", script: `return {redis.call('set', KEYS[1], 'v', 'NX', 'PX', 5000), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "SET EX", script: `redis.call('set', KEYS[1], 'v', 'ex', 7); return redis.call('pttl', KEYS[1])`, keys: k1},
	{name: "SET PXAT", script: `redis.call('set', KEYS[1], 'v', 'PXAT', ARGV[1]); return redis.call('pexpiretime', KEYS[1])`, keys: k1, args: []string{far}},
	{name: "SET EXAT", script: `redis.call('set', KEYS[1], 'v', 'EXAT', ARGV[1]); return redis.call('expiretime', KEYS[1])`, keys: k1, args: []string{farS}},
	{name: "SET PXAT past", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('set', KEYS[1], 'v', 'PXAT', 1000), redis.call('exists', KEYS[1])}`, keys: k1},
	{name: "SET KEEPTTL", script: `redis.call('set', KEYS[1], 'a', 'PX', 9000); redis.call('set', KEYS[1], 'b', 'KEEPTTL'); return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "SET drops the ttl", script: `redis.call('set', KEYS[1], 'a', 'PX', 9000); redis.call('set', KEYS[1], 'b'); return redis.call('pttl', KEYS[1])`, keys: k1},
	{name: "SET GET", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('set', KEYS[1], 'b', 'GET'), redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SET GET NX held", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('set', KEYS[1], 'b', 'NX', 'GET'), redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SET GET absent", script: `return {redis.call('set', KEYS[1], 'b', 'GET'), redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SET GET on a hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return redis.pcall('set', KEYS[1], 'b', 'GET')['err']`, keys: k1},
	{name: "SET over a hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `redis.call('set', KEYS[1], 'b'); return {redis.call('type', KEYS[1]), redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SET NX XX", script: `return redis.pcall('set', KEYS[1], 'v', 'NX', 'XX')['err']`, keys: k1},
	{name: "SET EX KEEPTTL", script: `return redis.pcall('set', KEYS[1], 'v', 'EX', 1, 'KEEPTTL')['err']`, keys: k1},
	// The last PX wins: it is long, so that the key is compared on both
	// sides alive (the first, 1ms, would have it gone on one and not the
	// other), and a node that kept the first would show it gone or 30s short.
	{name: "SET PX PX", script: `return redis.pcall('set', KEYS[1], 'v', 'PX', 1, 'PX', 30000)['err']`, keys: k1},
	{name: "SET PX missing", script: `return redis.pcall('set', KEYS[1], 'v', 'PX')['err']`, keys: k1},
	{name: "SET PX zero", script: `return redis.pcall('set', KEYS[1], 'v', 'PX', 0)['err']`, keys: k1},
	{name: "SET PX word", script: `return redis.pcall('set', KEYS[1], 'v', 'PX', 'x')['err']`, keys: k1},
	{name: "SET PX plus", script: `return redis.pcall('set', KEYS[1], 'v', 'PX', '+5')['err']`, keys: k1},
	{name: "SET EX overflow", script: `return redis.pcall('set', KEYS[1], 'v', 'EX', '9223372036854775')['err']`, keys: k1},
	{name: "SET number args", script: `redis.call('set', KEYS[1], 10); redis.call('set', KEYS[2], 1.5); return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2])}`, keys: k12},
	{name: "SET float arg", script: `redis.call('set', KEYS[1], 0.1); return redis.call('get', KEYS[1])`, keys: k1},
	{name: "SET table arg", script: `return redis.pcall('set', KEYS[1], {})['err']`, keys: k1},
	{name: "SETNX", setup: `redis.call('set', KEYS[2], 'a')`, script: `return {redis.call('setnx', KEYS[1], 'v'), redis.call('setnx', KEYS[2], 'v'), redis.call('pttl', KEYS[1])}`, keys: k12},
	{name: "SETEX", script: `return {redis.call('setex', KEYS[1], 5, 'v'), redis.call('pttl', KEYS[1]), redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SETEX zero", script: `return redis.pcall('setex', KEYS[1], 0, 'v')['err']`, keys: k1},
	{name: "PSETEX", script: `return {redis.call('psetex', KEYS[1], 5000, 'v'), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "PSETEX negative", script: `return redis.pcall('psetex', KEYS[1], -5, 'v')['err']`, keys: k1},
	{name: "GETDEL", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('getdel', KEYS[1]), redis.call('getdel', KEYS[1]), redis.call('exists', KEYS[1])}`, keys: k1},
	{name: "GETDEL hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return redis.pcall('getdel', KEYS[1])['err']`, keys: k1},
	{name: "DEL", setup: `redis.call('set', KEYS[1], 'a'); redis.call('hset', KEYS[2], 'f', 'v')`, script: `return {redis.call('del', KEYS[1], KEYS[2], 'x'), redis.call('del', KEYS[1])}`, keys: k12},
	{name: "UNLINK", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.call('unlink', KEYS[1], KEYS[2])`, keys: k12},
	{name: "EXISTS", setup: `redis.call('set', KEYS[1], 'a'); redis.call('hset', KEYS[2], 'f', 'v')`, script: `return redis.call('exists', KEYS[1], KEYS[1], KEYS[2], 'x')`, keys: k12},
	{name: "STRLEN", setup: `redis.call('set', KEYS[1], 'abc')`, script: `return {redis.call('strlen', KEYS[1]), redis.call('strlen', KEYS[2])}`, keys: k12},
	{name: "STRLEN hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return redis.pcall('strlen', KEYS[1])['err']`, keys: k1},
	{name: "TYPE", setup: `redis.call('set', KEYS[1], 'a'); redis.call('hset', KEYS[2], 'f', 'v')`, script: `return {redis.call('type', KEYS[1]), redis.call('type', KEYS[2]), redis.call('type', 'none')}`, keys: k12},
	{name: "TYPE status", script: `return redis.call('type', KEYS[1])`, keys: k1, status: true},
	{name: "GET on a hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return redis.pcall('get', KEYS[1])['err']`, keys: k1},
	{name: "GET on a hash aborts", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `redis.call('get', KEYS[1]); redis.call('set', KEYS[2], 'x')`, keys: k12},
}

var luaTTLCases = []luaCase{
	{name: "PEXPIRE PTTL", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pexpire', KEYS[1], 4000), redis.call('pttl', KEYS[1]), redis.call('pttl', KEYS[2])}`, keys: k12},
	{name: "PTTL none", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pttl', KEYS[1]), redis.call('ttl', KEYS[1]), redis.call('pexpiretime', KEYS[1]), redis.call('expiretime', KEYS[2])}`, keys: k12},
	{name: "EXPIRE TTL", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('expire', KEYS[1], 5), redis.call('ttl', KEYS[1]), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "TTL rounds", setup: `redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'a')`, script: `redis.call('pexpire', KEYS[1], 1600); redis.call('pexpire', KEYS[2], 1400); return {redis.call('ttl', KEYS[1]), redis.call('ttl', KEYS[2])}`, keys: k12},
	{name: "PEXPIREAT", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pexpireat', KEYS[1], ARGV[1]), redis.call('pexpiretime', KEYS[1]), redis.call('expiretime', KEYS[1])}`, keys: k1, args: []string{far}},
	{name: "EXPIREAT", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return {redis.call('expireat', KEYS[1], ARGV[1]), redis.call('expiretime', KEYS[1])}`, keys: k1, args: []string{farS}},
	{name: "PEXPIRE absent", script: `return redis.call('pexpire', KEYS[1], 100)`, keys: k1},
	{name: "PEXPIRE negative deletes", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pexpire', KEYS[1], -1), redis.call('exists', KEYS[1])}`, keys: k1},
	{name: "EXPIREAT past deletes", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return {redis.call('expireat', KEYS[1], 1), redis.call('exists', KEYS[1])}`, keys: k1},
	{name: "PEXPIRE NX XX", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pexpire', KEYS[1], 1000, 'xx'), redis.call('pexpire', KEYS[1], 2000, 'NX'), redis.call('pexpire', KEYS[1], 3000, 'NX'), redis.call('pexpire', KEYS[1], 4000, 'XX'), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "PEXPIRE GT LT", setup: `redis.call('set', KEYS[1], 'a')`, script: `return {redis.call('pexpire', KEYS[1], 1000, 'GT'), redis.call('pexpire', KEYS[1], 5000, 'LT'), redis.call('pexpire', KEYS[1], 4000, 'GT'), redis.call('pexpire', KEYS[1], 6000, 'GT'), redis.call('pexpire', KEYS[1], 7000, 'LT'), redis.call('pexpire', KEYS[1], 3000, 'LT'), redis.call('pttl', KEYS[1])}`, keys: k1},
	{name: "PEXPIRE NX GT", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('pexpire', KEYS[1], 10, 'NX', 'GT')['err']`, keys: k1},
	{name: "PEXPIRE GT LT together", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('pexpire', KEYS[1], 10, 'GT', 'LT')['err']`, keys: k1},
	{name: "PEXPIRE bad option", script: `return redis.pcall('pexpire', KEYS[1], 10, 'foo')['err']`, keys: k1},
	{name: "PEXPIRE word", script: `return redis.pcall('pexpire', KEYS[1], 'x')['err']`, keys: k1},
	{name: "PEXPIRE word, bad option", script: `return redis.pcall('pexpire', KEYS[1], 'x', 'foo')['err']`, keys: k1},
	{name: "PEXPIRE word, NX XX", script: `return redis.pcall('pexpire', KEYS[1], 'x', 'NX', 'XX')['err']`, keys: k1},
	{name: "EXPIRE overflow", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('expire', KEYS[1], '9223372036854775')['err']`, keys: k1},
	{name: "PEXPIRE overflow", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('pexpire', KEYS[1], '9223372036854775000')['err']`, keys: k1},
	{name: "EXPIRE arity", script: `return redis.pcall('expire', KEYS[1])['err']`, keys: k1},
}

var luaHashCases = []luaCase{
	{name: "HSET HGET", script: `return {redis.call('hset', KEYS[1], 'a', '1', 'b', '2'), redis.call('hset', KEYS[1], 'a', '3', 'c', '4'), redis.call('hget', KEYS[1], 'a'), redis.call('hget', KEYS[1], 'x'), redis.call('hget', KEYS[2], 'a')}`, keys: k12},
	{name: "HSET odd", script: `return redis.pcall('hset', KEYS[1], 'a', '1', 'b')['err']`, keys: k1},
	{name: "HSET on a string", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('hset', KEYS[1], 'a', '1')['err']`, keys: k1},
	{name: "HMSET", script: `return redis.call('hmset', KEYS[1], 'a', '1', 'b', '2')`, keys: k1, status: true},
	{name: "HSETNX", setup: `redis.call('hset', KEYS[1], 'a', '1')`, script: `return {redis.call('hsetnx', KEYS[1], 'a', '2'), redis.call('hsetnx', KEYS[1], 'b', '3'), redis.call('hsetnx', KEYS[2], 'b', '3'), redis.call('hget', KEYS[1], 'a')}`, keys: k12},
	{name: "HDEL", setup: `redis.call('hset', KEYS[1], 'a', '1', 'b', '2', 'c', '3')`, script: `return {redis.call('hdel', KEYS[1], 'a', 'x', 'c'), redis.call('hdel', KEYS[2], 'a'), redis.call('hlen', KEYS[1])}`, keys: k12},
	{name: "HDEL last field", setup: `redis.call('hset', KEYS[1], 'a', '1')`, script: `return {redis.call('hdel', KEYS[1], 'a'), redis.call('exists', KEYS[1]), redis.call('type', KEYS[1])}`, keys: k1},
	{name: "HEXISTS", setup: `redis.call('hset', KEYS[1], 'a', '1')`, script: `return {redis.call('hexists', KEYS[1], 'a'), redis.call('hexists', KEYS[1], 'b'), redis.call('hexists', KEYS[2], 'a')}`, keys: k12},
	{name: "HINCRBY", setup: `redis.call('hset', KEYS[1], 'a', '5')`, script: `return {redis.call('hincrby', KEYS[1], 'a', 3), redis.call('hincrby', KEYS[1], 'b', -2), redis.call('hincrby', KEYS[2], 'c', 1), redis.call('pttl', KEYS[2])}`, keys: k12},
	{name: "HINCRBY not a number", setup: `redis.call('hset', KEYS[1], 'a', 'x')`, script: `return redis.pcall('hincrby', KEYS[1], 'a', 1)['err']`, keys: k1},
	{name: "HINCRBY bad increment", script: `return redis.pcall('hincrby', KEYS[1], 'a', 'y')['err']`, keys: k1},
	{name: "HINCRBY overflow", setup: `redis.call('hset', KEYS[1], 'a', '9223372036854775807')`, script: `return redis.pcall('hincrby', KEYS[1], 'a', 1)['err']`, keys: k1},
	{name: "HINCRBY on a string", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('hincrby', KEYS[1], 'a', 1)['err']`, keys: k1},
	{name: "HLEN", setup: `redis.call('hset', KEYS[1], 'a', '1', 'b', '2')`, script: `return {redis.call('hlen', KEYS[1]), redis.call('hlen', KEYS[2])}`, keys: k12},
	{name: "HGETALL HKEYS HVALS", setup: `redis.call('hset', KEYS[1], 'z', '1', 'a', '2', 'm', '3'); redis.call('hdel', KEYS[1], 'a'); redis.call('hset', KEYS[1], 'b', '4')`,
		script: `return {redis.call('hgetall', KEYS[1]), redis.call('hkeys', KEYS[1]), redis.call('hvals', KEYS[1]), redis.call('hgetall', KEYS[2])}`, keys: k12},
	{name: "HMGET", setup: `redis.call('hset', KEYS[1], 'a', '1', 'b', '2')`, script: `return {redis.call('hmget', KEYS[1], 'b', 'x', 'a'), redis.call('hmget', KEYS[2], 'a')}`, keys: k12},
	{name: "HGET on a string", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('hget', KEYS[1], 'f')['err']`, keys: k1},
	{name: "HGETALL on a string", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('hgetall', KEYS[1])`, keys: k1},
	{name: "hash ttl", script: `redis.call('hset', KEYS[1], 'a', '1'); local t = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], 3000); redis.call('hset', KEYS[1], 'b', '2'); return {t, redis.call('pttl', KEYS[1])}`, keys: k1},
}

var luaMiscCases = []luaCase{
	{name: "shebang", script: "#!lua\nreturn redis.call('set', KEYS[1], 'v')", keys: k1, status: true},
	{name: "shebang flags", script: "#!lua  flags=no-writes,allow-oom\nreturn redis.call('get', KEYS[1])", keys: k1},
	{name: "shebang no flags", script: "#!lua flags=\nreturn 2"},
	{name: "shebang only", script: "#!lua"},
	{name: "shebang engine", script: "#!js\nreturn 1"},
	{name: "shebang option", script: "#!lua name=foo\nreturn 1"},
	{name: "shebang flag", script: "#!lua flags=no-writes,bogus\nreturn 1"},
	{name: "table.concat", script: `return table.concat({'a', 1, 'b'}, '-')`},
	{name: "math.random seeded", script: `math.randomseed(42); return {math.random(1000000), math.random(5, 9), math.random(-3, 3), math.floor(math.random() * 1e9)}`},
	{name: "math.random negative seed", script: `math.randomseed(-7); return {math.random(100), math.random(100), math.random(2^31 - 1)}`},
	{name: "math.random empty interval", script: `math.randomseed(1); return {(pcall(math.random, 0)), (pcall(math.random, 5, 4)), math.random(3)}`},
	{name: "PUBLISH", script: `return redis.call('publish', 'ch', 'msg')`},
	{name: "SELECT", script: `redis.call('select', 3); redis.call('set', KEYS[1], 'v'); local in3 = redis.call('get', KEYS[1]); redis.call('select', 0); return {in3, redis.call('get', KEYS[1])}`, keys: k1},
	{name: "SELECT status", script: `return redis.call('select', 2)`, status: true},
	{name: "SELECT out of range", script: `return redis.pcall('select', 16)['err']`},
	{name: "SELECT word", script: `return redis.pcall('select', 'x')['err']`},
	{name: "number truncated", script: `return {3.7, -3.7, 0.5}`},
	{name: "booleans", script: `return {true, false, 1}`},
	{name: "false", script: `return false`},
	{name: "nil", script: `return nil`},
	{name: "no return", script: `local x = 1`},
	{name: "array stops at nil", script: `return {1, 2, nil, 4}`},
	{name: "nested", script: `return {1, {2, 'x', {false}}, 'y'}`},
	{name: "ok table", script: `return {ok = 'fine'}`, status: true},
	{name: "err table", script: `return {err = 'My Error'}`},
	{name: "error_reply", script: `return redis.error_reply('CODE text')`},
	{name: "status_reply", script: `return redis.status_reply('Yes')`, status: true},
	{name: "status in an array", script: `return {redis.call('set', KEYS[1], 'v'), redis.status_reply('x')}`, keys: k1},
	{name: "call reply as Lua", setup: `redis.call('set', KEYS[1], 'a')`,
		script: `local s = redis.call('set', KEYS[1], 'b'); local g = redis.call('get', KEYS[2]); return {type(s), s.ok, type(g), tostring(g), type(redis.call('exists', KEYS[1]))}`, keys: k12},
	{name: "sha1hex", script: `return redis.sha1hex('abc')`},
	{name: "pcall error table", setup: `redis.call('set', KEYS[1], 'a')`, script: `local r = redis.pcall('hget', KEYS[1], 'f'); return {type(r), r.err}`, keys: k1},
	{name: "pcall error returned", setup: `redis.call('set', KEYS[1], 'a')`, script: `return redis.pcall('hget', KEYS[1], 'f')`, keys: k1},
	{name: "call error aborts", setup: `redis.call('set', KEYS[1], 'a')`, script: `redis.call('hget', KEYS[1], 'f'); return 1`, keys: k1},
	{name: "call error caught by pcall", setup: `redis.call('set', KEYS[1], 'a')`, script: `local ok, e = pcall(function() return redis.call('hget', KEYS[1], 'f') end); return {tostring(ok), type(e), e}`, keys: k1},
	{name: "runtime error", script: `return nil + 1`},
	{name: "error()", script: `error('boom')`},
	{name: "no arguments", script: `return redis.pcall()['err']`},
	{name: "wrong arity", script: `return redis.pcall('get')['err']`},
	{name: "replicate_commands", script: `return redis.replicate_commands()`},
	{name: "set_repl", script: `redis.set_repl(redis.REPL_ALL); return redis.REPL_AOF`},
	{name: "setresp 2", script: `redis.setresp(2); return 1`},
	{name: "log", script: `redis.log(redis.LOG_WARNING, 'from a script'); return redis.LOG_NOTICE`},
	{name: "global write", script: `x = 1; return 1`},
	{name: "string and table libs", script: `local t = {}; table.insert(t, string.upper('a')); table.insert(t, string.format('%d', 7)); return {t[1], t[2], math.floor(2.5), #KEYS, #ARGV, table.getn(ARGV)}`, keys: k1, args: []string{"x", "y"}},
	{name: "no os", script: `return type(os)`},
	{name: "compile error", script: `return (`},
}

// luaHashLock is a Redisson-style reentrant lock on a hash.
const luaHashLock = `if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);`

func TestMemoryEvalAsRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	groups := map[string][]luaCase{"strings": luaStringCases, "ttls": luaTTLCases, "hashes": luaHashCases,
		"misc": luaMiscCases, "multi-key": luaMultiCases, "numbers": luaNumberCases, "libraries": libraryCases(t)}
	for group, cases := range groups {
		for _, tc := range cases {
			t.Run(group+"/"+tc.name, func(t *testing.T) { compareWithRedis(t, rdb, tc) })
		}
	}
}

// compareWithRedis runs tc on a flushed Redis and a fresh in-memory node.
func compareWithRedis(t *testing.T, rdb *redis.Client, tc luaCase) {
	t.Helper()
	ctx := t.Context()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	m := New("mem")
	t.Cleanup(func() { _ = m.Close() })
	if tc.setup != "" {
		if err := rdb.Eval(ctx, tc.setup, tc.keys, strArgs(tc.args)...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("setup on redis: %v", err)
		}
		rep := quorum.Call(ctx, m, nodetest.EvalCmd(tc.setup, tc.keys, tc.args...))
		if rep.Err != nil || rep.Value == nil || rep.Value.Kind == quorum.ErrorValue {
			t.Fatalf("setup on the node: %+v %+v", rep, rep.Value)
		}
	}
	res, err := rdb.Eval(ctx, tc.script, tc.keys, strArgs(tc.args)...).Result()
	want := fromGoRedis(res, err)
	rep := quorum.Call(ctx, m, nodetest.EvalCmd(tc.script, tc.keys, tc.args...))
	if rep.Err != nil || rep.Value == nil {
		t.Fatalf("node: %+v", rep)
	}
	got := *rep.Value
	if tc.status && got.Kind != quorum.StatusValue {
		t.Errorf("node's reply %+v is not a status", got)
	}
	if !sameValue(got, want) {
		t.Errorf("node replied %s, redis %s", showValue(got), showValue(want))
	}
	for _, db := range []int{0, 3} {
		for _, k := range tc.keys {
			compareKey(t, rdb, m, db, k)
		}
	}
}

func strArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// fromGoRedis converts what go-redis read. A status reads as a string, so
// it becomes a bulk: sameValue takes either for it.
func fromGoRedis(res any, err error) quorum.Value {
	switch {
	case err == redis.Nil:
		return quorum.Value{Kind: quorum.NilValue}
	case err != nil:
		return quorum.Value{Kind: quorum.ErrorValue, Str: err.Error()}
	}
	switch v := res.(type) {
	case int64:
		return quorum.Value{Kind: quorum.IntValue, Int: v}
	case string:
		return quorum.Value{Kind: quorum.BulkValue, Str: v}
	case nil:
		return quorum.Value{Kind: quorum.NilValue}
	case error:
		return quorum.Value{Kind: quorum.ErrorValue, Str: v.Error()}
	case []any:
		arr := quorum.Value{Kind: quorum.ArrayValue, Elems: []quorum.Value{}}
		for _, e := range v {
			arr.Elems = append(arr.Elems, fromGoRedis(e, nil))
		}
		return arr
	}
	return quorum.Value{Kind: quorum.ErrorValue, Str: fmt.Sprintf("unexpected %T", res)}
}

// sameValue compares a node's reply with Redis's: a status with the
// string go-redis read for it, an error by its code (Redis adds where in
// the script it was raised).
func sameValue(got, want quorum.Value) bool {
	switch {
	case got.Kind == quorum.StatusValue && want.Kind == quorum.BulkValue:
		return got.Str == want.Str
	case got.Kind != want.Kind:
		return false
	case got.Kind == quorum.ErrorValue:
		gc, _, _ := strings.Cut(got.Str, " ")
		wc, _, _ := strings.Cut(want.Str, " ")
		return gc == wc
	case got.Kind == quorum.ArrayValue:
		if len(got.Elems) != len(want.Elems) {
			return false
		}
		for i := range got.Elems {
			if !sameValue(got.Elems[i], want.Elems[i]) {
				return false
			}
		}
		return true
	}
	return got.Str == want.Str && (got.Int == want.Int || ttlNear(got.Int, want.Int))
}

// ttlNear accepts two ttls in ms a few ms apart: Redis 7.0 reads its clock
// anew for each command of a script, so a PTTL right after a PEXPIRE may
// be a ms short. The node's time stands still during a script.
func ttlNear(a, b int64) bool {
	return a >= 1000 && b >= 1000 && a-b <= 5 && b-a <= 5
}

func showValue(v quorum.Value) string {
	switch v.Kind {
	case quorum.NilValue:
		return "nil"
	case quorum.IntValue:
		return fmt.Sprint(v.Int)
	case quorum.ArrayValue:
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = showValue(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%d:%q", v.Kind, v.Str)
}

// luaDump reads a key of db: its type, its value (a hash's fields in
// order), and its pttl, last.
const luaDump = `redis.call('select', ARGV[1])
local t = redis.call('type', KEYS[1]).ok
local v = false
if t == 'string' then v = redis.call('get', KEYS[1]) elseif t == 'hash' then v = redis.call('hgetall', KEYS[1]) end
return {t, v, redis.call('pttl', KEYS[1])}`

// compareKey compares key of db on both sides; the pttls may differ by
// the time between the reads.
func compareKey(t *testing.T, rdb *redis.Client, m *Memory, db int, key string) {
	t.Helper()
	res, err := rdb.Eval(t.Context(), luaDump, []string{key}, db).Result()
	want := fromGoRedis(res, err)
	rep := quorum.Call(t.Context(), m, nodetest.EvalCmd(luaDump, []string{key}, fmt.Sprint(db)))
	if rep.Value == nil || want.Kind != quorum.ArrayValue || len(want.Elems) != 3 {
		t.Fatalf("dump of %s: node %+v, redis %s", key, rep, showValue(want))
	}
	got := *rep.Value
	gt, wt := got.Elems[2].Int, want.Elems[2].Int
	if !sameValue(quorum.Value{Kind: quorum.ArrayValue, Elems: got.Elems[:2]}, quorum.Value{Kind: quorum.ArrayValue, Elems: want.Elems[:2]}) ||
		(gt < 0 || wt < 0) && gt != wt || gt-wt > 1000 || wt-gt > 1000 {
		t.Errorf("db %d key %s: node has %s, redis %s", db, key, showValue(got), showValue(want))
	}
}

// libraryScripts reads the lock libraries' script bodies from the
// commands package's source, so that the node runs them byte for byte.
func libraryScripts(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../commands/scripts_*_bodies.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no script bodies found: %v", err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
				if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[vs.Names[0].Name] = constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
				}
			}
			return true
		})
	}
	return out
}

// libraryCases runs every library script, and the hash lock, with each of
// its keys absent, held by the script's token, and held by another.
func libraryCases(t *testing.T) []luaCase {
	bodies := libraryScripts(t)
	bodies["hashLock"] = luaHashLock
	states := []struct{ name, setup string }{
		{"absent", ""},
		{"own", `for _, k in ipairs(KEYS) do redis.call('set', k, 'tok', 'PX', 20000) end`},
		{"other", `for _, k in ipairs(KEYS) do redis.call('set', k, 'other', 'PX', 20000) end`},
		{"own hash", `for _, k in ipairs(KEYS) do redis.call('hset', k, 'tok', 1); redis.call('pexpire', k, 20000) end`},
		{"other hash", `for _, k in ipairs(KEYS) do redis.call('hset', k, 'other', 1); redis.call('pexpire', k, 20000) end`},
	}
	var cases []luaCase
	for name, body := range bodies {
		args := []string{"tok", "10000", "0"}
		if name == "hashLock" {
			args = []string{"10000", "tok"}
		}
		for _, st := range states {
			cases = append(cases, luaCase{name: name + " " + st.name, setup: st.setup, script: body, keys: k12, args: args})
		}
	}
	if len(cases) < 20*len(states) {
		t.Fatalf("only %d library cases", len(cases))
	}
	return cases
}

// TestMemoryEvalDeadline: a script that never ends is stopped at the
// node's deadline, answers a late error, and leaves nothing it wrote.
func TestMemoryEvalDeadline(t *testing.T) {
	for _, src := range []string{
		`while true do end`,
		`redis.call('set', KEYS[1], 'v'); redis.call('del', KEYS[2]); while true do end`,
		`while true do pcall(function() while true do end end) end`,
	} {
		t.Run(src, func(t *testing.T) {
			m, _ := newTestMemory(t)
			quorum.Call(t.Context(), m, memSetNX("{t}k2", "held", time.Minute))
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			rep := quorum.Call(ctx, m, nodetest.EvalCmd(src, k12))
			if !errors.Is(rep.Err, context.DeadlineExceeded) {
				t.Fatalf("reply %+v, want a deadline error", rep)
			}
			checkMemKeys(t, m, map[string]string{"{t}k1": "", "{t}k2": "held"}, map[string]time.Duration{"{t}k2": time.Minute})
			after := quorum.Call(t.Context(), m, nodetest.EvalCmd(`return 7`, nil))
			if after.Value == nil || after.Value.Int != 7 {
				t.Fatalf("node after the stopped script: %+v", after)
			}
		})
	}
}

// evalOn runs src on m and returns its reply, failing on the node's error.
func evalOn(t *testing.T, m *Memory, cmd quorum.Cmd) quorum.Reply {
	t.Helper()
	rep := quorum.Call(t.Context(), m, cmd)
	if rep.Err != nil || rep.Value == nil {
		t.Fatalf("Eval: %+v", rep)
	}
	return rep
}

// TestMemoryEvalNodeOnly: what the node does on purpose unlike a Redis
// server: no unsafe library, only the admitted commands, bounded replies
// and allocations.
func TestMemoryEvalNodeOnly(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // showValue of the reply, or an error's code
	}{
		{"no unsafe globals", `local out = {}
			for _, n in ipairs({'dofile', 'loadfile', 'load', 'loadstring', 'require', 'module', 'os', 'io', 'debug', 'package', 'coroutine', 'channel', 'print'}) do
				table.insert(out, type(rawget(_G, n)))
			end
			return table.concat(out, ',')`, `2:"nil,nil,nil,nil,nil,nil,nil,nil,nil,nil,nil,nil,nil"`},
		{"undefined global read", `return undefined_thing`, "ERR"},
		{"command not admitted", `return redis.call('incr', KEYS[1])`, "ERR"},
		{"unknown command", `return redis.pcall('nosuch')`, "ERR"},
		{"huge string.rep", `return string.rep('x', 1e12)`, "ERR"},
		{"string.rep", `return string.rep('ab', 3)`, `2:"ababab"`},
		{"deep recursion", `local function f(n) return 1 + f(n) end; return f(1)`, "ERR"},
		{"huge unpack", `return select('#', unpack({}, 1, 1e8))`, "ERR"},
		{"unpack", `return {unpack({1, 2, 3}, 2)}`, "[2 3]"},
		{"huge string.byte", `return select('#', string.byte(string.rep('x', 1e6), 1, -1))`, "ERR"},
		{"string.byte", `return {string.byte('abc', -2, -1)}`, "[98 99]"},
		{"huge gsub", `local s = string.rep('x', 60000); return #s:gsub('x', s)`, "ERR"},
		{"gsub", `return (string.gsub('a-b', '-', '+'))`, `2:"a+b"`},
		{"huge table.concat", `local s = string.rep('x', 1048576); local t = {}; for i = 1, 1000 do t[i] = s end; return #table.concat(t)`, "ERR"},
		{"huge table.concat separator", `return #table.concat({1, 2, 3}, string.rep('x', 40000000))`, "ERR"},
		{"table.concat", `return table.concat({'a', 1, 'b'}, '-', 2)`, `2:"1-b"`},
		{"table.concat of a hole", `return pcall(table.concat, {'a', nil, 'b'}, '', 1, 3)`, "nil"},
		{"self-holding table", `local t = {}; t[1] = t; local ok = pcall(function() return redis.call('set', KEYS[1], t) end); return ok`, "nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory(t)
			got := evalOn(t, m, nodetest.EvalCmd(tc.src, k1)).Value
			s := showValue(*got)
			if got.Kind == quorum.ErrorValue {
				s, _, _ = strings.Cut(got.Str, " ")
			}
			if s != tc.want {
				t.Errorf("reply %s (%+v), want %s", s, got, tc.want)
			}
		})
	}
}

// TestMemoryEvalSelfHoldingTable: a reply table that holds itself is cut
// at a bounded depth with an error, not converted forever.
func TestMemoryEvalSelfHoldingTable(t *testing.T) {
	m, _ := newTestMemory(t)
	v := *evalOn(t, m, nodetest.EvalCmd(`local t = {}; t[1] = t; return t`, nil)).Value
	depth := 0
	for v.Kind == quorum.ArrayValue && len(v.Elems) == 1 {
		v = v.Elems[0]
		depth++
	}
	if v.Kind != quorum.ErrorValue || depth != luaMaxDepth {
		t.Fatalf("innermost %+v at depth %d, want an error at %d", v, depth, luaMaxDepth)
	}
}

// TestMemoryEvalDB: the script starts in Cmd.DB, SELECT moves it, and
// each db's key lives at memKey.
func TestMemoryEvalDB(t *testing.T) {
	m, _ := newTestMemory(t)
	cmd := nodetest.EvalCmd(`redis.call('set', KEYS[1], 'in2', 'PX', 1000); redis.call('select', 5); redis.call('hset', KEYS[1], 'f', 'in5'); return redis.call('exists', KEYS[1])`, k1)
	cmd.DB = 2
	if rep := evalOn(t, m, cmd); rep.Value.Kind != quorum.IntValue || rep.Value.Int != 1 {
		t.Fatalf("reply %+v", rep.Value)
	}
	checkMemKeys(t, m, map[string]string{k1[0]: "", memKey(2, k1[0]): "in2"}, nil)
	m.mu.Lock()
	h := m.scripts.hashes[memKey(5, k1[0])]
	m.mu.Unlock()
	if h == nil {
		t.Fatal("no hash in db 5")
	}
	if v, _ := h.get("f"); v != "in5" {
		t.Fatalf("hash field = %q", v)
	}
	bad := nodetest.EvalCmd(`return 1`, nil)
	bad.DB = 16
	if rep := quorum.Call(t.Context(), m, bad); rep.Err == nil {
		t.Fatalf("db 16: %+v, want an error", rep)
	}
}

// TestMemoryEvalLimitAndTTL: a key a script leaves without expiry gets
// Limit (Mark or not); Reply.TTL is the longest among the keys written.
func TestMemoryEvalLimitAndTTL(t *testing.T) {
	m, _ := newTestMemory(t)
	src := `redis.call('set', KEYS[1], 'a'); redis.call('hset', KEYS[2], 'f', 1); redis.call('set', 'other', 'x', 'PX', 90000); return 1`
	cmd := nodetest.EvalCmd(src, k12)
	cmd.Limit = 30 * time.Second
	rep := evalOn(t, m, cmd)
	if rep.TTL != 90*time.Second {
		t.Errorf("TTL %v, want 90s", rep.TTL)
	}
	checkMemKeys(t, m, map[string]string{k12[0]: "a"}, map[string]time.Duration{k12[0]: 30 * time.Second, k12[1]: 30 * time.Second})

	rep = evalOn(t, m, nodetest.EvalCmd(`redis.call('set', KEYS[1], 'b'); return 1`, k1))
	if rep.TTL >= 0 {
		t.Errorf("TTL %v for a key left without expiry, want negative", rep.TTL)
	}
	if got := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Get, Key: k1[0]}); !got.OK || got.TTL >= 0 {
		t.Errorf("Get of a key without expiry: %+v", got)
	}
	rep = evalOn(t, m, nodetest.EvalCmd(`return redis.call('get', KEYS[1])`, k1))
	if rep.TTL != 0 {
		t.Errorf("TTL %v of a script that wrote nothing, want 0", rep.TTL)
	}
}

// luaRelease is a lock library's release: delete the key if it holds
// ARGV[1].
const luaRelease = `local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1])
return 1`

// markedEval is an Eval recorded at mark for a minute.
func memMarkedEval(src, mark string, keys []string, args ...string) quorum.Cmd {
	c := nodetest.EvalCmd(src, keys, args...)
	c.Mark, c.TTL, c.Limit = mark, time.Minute, 30*time.Second
	return c
}

func memUndoEval(mark string, keys []string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.UndoEval, Mark: mark, Keys: keys}
}

// TestMemoryUndoEval: UndoEval puts back what a marked script changed,
// where nothing changed the key since, once.
func TestMemoryUndoEval(t *testing.T) {
	held := memSetNX(k1[0], "a", 7*time.Second)
	tests := []struct {
		name   string
		before []quorum.Cmd
		eval   quorum.Cmd
		after  []quorum.Cmd // between the Eval and the undo
		undone bool
		vals   map[string]string
		ttls   map[string]time.Duration
		hash   bool // k1 holds a hash afterwards
	}{
		{name: "deleted key comes back with its ttl", before: []quorum.Cmd{held},
			eval: memMarkedEval(luaRelease, "m", k1, "a"), undone: true,
			vals: map[string]string{k1[0]: "a"}, ttls: map[string]time.Duration{k1[0]: 7 * time.Second}},
		{name: "created key goes", eval: memMarkedEval(`return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000)`, "m", k1, "b"),
			undone: true, vals: map[string]string{k1[0]: ""}},
		{name: "extended key gets its old ttl", before: []quorum.Cmd{held},
			eval: memMarkedEval(`return redis.call('pexpire', KEYS[1], 60000)`, "m", k1), undone: true,
			ttls: map[string]time.Duration{k1[0]: 7 * time.Second}},
		{name: "key changed since stays", eval: memMarkedEval(`return redis.call('set', KEYS[1], 'b', 'PX', 10000)`, "m", k1),
			after: []quorum.Cmd{{Kind: quorum.Set, Key: k1[0], Token: "c", TTL: time.Second}},
			vals:  map[string]string{k1[0]: "c"}, ttls: map[string]time.Duration{k1[0]: time.Second}},
		{name: "key extended since stays", eval: memMarkedEval(`return redis.call('set', KEYS[1], 'b', 'PX', 10000)`, "m", k1),
			after: []quorum.Cmd{{Kind: quorum.Expire, Key: k1[0], TTL: time.Hour}},
			vals:  map[string]string{k1[0]: "b"}, ttls: map[string]time.Duration{k1[0]: time.Hour}},
		{name: "hash lock goes", eval: memMarkedEval(luaHashLock, "m", k1, "10000", "tok"), undone: true,
			vals: map[string]string{k1[0]: ""}},
		{name: "reentered hash lock drops one hold",
			before: []quorum.Cmd{memMarkedEval(luaHashLock, "m0", k1, "10000", "tok")},
			eval:   memMarkedEval(luaHashLock, "m", k1, "20000", "tok"), undone: true, hash: true,
			ttls: map[string]time.Duration{k1[0]: 10 * time.Second}},
		{name: "script that changed nothing", before: []quorum.Cmd{held},
			eval: memMarkedEval(`return redis.call('set', KEYS[1], 'b', 'NX', 'PX', 10000)`, "m", k1),
			vals: map[string]string{k1[0]: "a"}},
		{name: "other mark", before: []quorum.Cmd{held}, eval: memMarkedEval(`return redis.call('del', KEYS[1])`, "m2", k1),
			vals: map[string]string{k1[0]: ""}},
		{name: "script error keeps its record", before: []quorum.Cmd{held},
			eval: memMarkedEval(`redis.call('del', KEYS[1]); return redis.call('hget', KEYS[1], 'x', 'y')`, "m", k1), undone: true,
			vals: map[string]string{k1[0]: "a"}},
		{name: "repeated run of one mark", eval: memMarkedEval(`return redis.call('pexpire', KEYS[1], 90000)`, "m", k1),
			before: []quorum.Cmd{memMarkedEval(`return redis.call('set', KEYS[1], 'b', 'NX', 'PX', 10000)`, "m", k1)},
			undone: true, vals: map[string]string{k1[0]: ""}},
		{name: "select", eval: memMarkedEval(`redis.call('select', 4); return redis.call('set', KEYS[1], 'b', 'PX', 10000)`, "m", k1),
			undone: true, vals: map[string]string{memKey(4, k1[0]): ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory(t)
			for _, c := range append(append(append([]quorum.Cmd(nil), tc.before...), tc.eval), tc.after...) {
				if r := quorum.Call(t.Context(), m, c); r.Err != nil {
					t.Fatalf("%+v: %v", c, r.Err)
				}
			}
			if got := quorum.Call(t.Context(), m, memUndoEval("m", k1)); got.OK != tc.undone || got.Err != nil {
				t.Fatalf("UndoEval = %+v, want OK %v", got, tc.undone)
			}
			checkMemKeys(t, m, tc.vals, tc.ttls)
			if got := evalOn(t, m, nodetest.EvalCmd(`return redis.call('type', KEYS[1])`, k1)).Value.Str == "hash"; got != tc.hash {
				t.Errorf("k1 is a hash: %v, want %v", got, tc.hash)
			}
			if again := quorum.Call(t.Context(), m, memUndoEval("m", k1)); again.OK {
				t.Errorf("second UndoEval = %+v, want nothing undone", again)
			}
		})
	}
}

// TestMemoryUndoEvalRecordExpires: the record lives for the Eval's TTL.
func TestMemoryUndoEvalRecordExpires(t *testing.T) {
	m, clock := newTestMemory(t)
	evalOn(t, m, memMarkedEval(`return redis.call('set', KEYS[1], 'b', 'PX', 600000)`, "m", k1))
	clock.advance(time.Minute)
	if got := quorum.Call(t.Context(), m, memUndoEval("m", k1)); got.OK {
		t.Fatalf("UndoEval after the record's ttl = %+v", got)
	}
	checkMemKeys(t, m, map[string]string{k1[0]: "b"}, nil)
}

// TestMemoryEvalHashAndNativeCommands: a hash a script holds is a taken
// key for the native claims, and a native SET replaces it.
func TestMemoryEvalHashAndNativeCommands(t *testing.T) {
	m, _ := newTestMemory(t)
	evalOn(t, m, nodetest.EvalCmd(luaHashLock, k1, "10000", "tok"))
	if got := quorum.Call(t.Context(), m, memSetNX(k1[0], "a", time.Minute)); got.OK {
		t.Fatalf("SetNX over a hash lock = %+v", got)
	}
	// As on a Redis node, whose GET refuses a hash.
	if got := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Get, Key: k1[0]}); !errors.Is(got.Err, backend.ServerError{Code: "WRONGTYPE"}) {
		t.Fatalf("Get of a hash lock = %+v, want WRONGTYPE", got)
	}
	quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Set, Key: k1[0], Token: "a", TTL: time.Minute})
	if got := evalOn(t, m, nodetest.EvalCmd(`return redis.call('type', KEYS[1])`, k1)).Value.Str; got != "string" {
		t.Fatalf("type after a native SET: %q", got)
	}
	if got := evalOn(t, m, nodetest.EvalCmd(luaHashLock, k1, "10000", "tok")).Value; got.Kind != quorum.ErrorValue {
		t.Fatalf("hash lock over a string: %+v, want WRONGTYPE", got)
	}
}

// TestMemoryEvalFaultAndDelay: Eval on a faultnode-wrapped node is
// failed, delayed and counted like every other command.
func TestMemoryEvalFaultAndDelay(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	boom := errors.New("boom")
	f.SetFault(boom)
	if got := quorum.Call(t.Context(), f, nodetest.EvalCmd(`return redis.call('set', KEYS[1], 'v')`, k1)); !errors.Is(got.Err, boom) {
		t.Fatalf("Eval with a fault = %+v", got)
	}
	checkMemKeys(t, m, map[string]string{k1[0]: ""}, nil)
	f.SetFault(nil)
	f.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if got := quorum.Call(ctx, f, nodetest.EvalCmd(`return redis.call('set', KEYS[1], 'v')`, k1)); !errors.Is(got.Err, context.DeadlineExceeded) {
		t.Fatalf("Eval delayed past its deadline = %+v", got)
	}
	f.SetDelay(time.Millisecond)
	if got := quorum.Call(t.Context(), f, nodetest.EvalCmd(`return 5`, nil)); got.Value == nil || got.Value.Int != 5 {
		t.Fatalf("delayed Eval = %+v", got)
	}
	if n := f.Calls("Eval"); n != 3 {
		t.Fatalf("Calls(Eval) = %d, want 3", n)
	}
}

// TestMemoryEvalAnnouncesRelease: a script that deletes a key someone
// waits for announces its release, as a native release does; a script
// stopped at its deadline announces nothing, having deleted nothing.
func TestMemoryEvalAnnouncesRelease(t *testing.T) {
	m, _ := newTestMemory(t)
	var released []string
	m.Watch(quorum.Watcher{Released: func(_ int, k string) { released = append(released, k) }})
	quorum.Call(t.Context(), m, memSetNX(k1[0], "a", time.Minute))
	// A second claim marks the key as waited for.
	quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.SetNX, Key: k1[0], Token: "b", TTL: time.Minute, Add: time.Minute})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if rep := quorum.Call(ctx, m, nodetest.EvalCmd(`redis.call('del', KEYS[1]); while true do end`, k1)); rep.Err == nil {
		t.Fatalf("runaway script: %+v", rep)
	}
	if len(released) != 0 {
		t.Fatalf("a stopped script announced %v", released)
	}
	checkMemKeys(t, m, map[string]string{k1[0]: "a"}, nil)

	if rep := evalOn(t, m, nodetest.EvalCmd(luaRelease, k1, "a")); rep.Value.Int != 1 {
		t.Fatalf("release script: %+v", rep.Value)
	}
	if len(released) != 1 || released[0] != k1[0] {
		t.Fatalf("released %v, want [%s]", released, k1[0])
	}
}

// TestMemoryEvalPublishes: a script's PUBLISH (Redisson's unlock notice,
// with the command named by an argument) reaches the node's subscribers
// as a native Publish does, and counts them.
func TestMemoryEvalPublishes(t *testing.T) {
	m, _ := newTestMemory(t)
	got := make(chan string, 4)
	m.Watch(quorum.Watcher{Message: func(channel, _, payload string) { got <- channel + "=" + payload }})
	if rep := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Subscribe, Key: "unlocks"}); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	rep := quorum.Call(t.Context(), m, nodetest.EvalCmd(`return redis.call(ARGV[2], KEYS[1], ARGV[1])`, []string{"unlocks"}, "0", "publish"))
	if v := rep.Value; rep.Err != nil || v == nil || v.Kind != quorum.IntValue || v.Int != 1 {
		t.Fatalf("publish from a script: %+v", rep)
	}
	select {
	case s := <-got:
		if s != "unlocks=0" {
			t.Fatalf("message %q, want unlocks=0", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the script's message was not delivered")
	}
}

// TestMemoryEvalStatesShareNothing: interpreters are reused, so a script
// that changes a library function, a global or a metatable must not hand
// the change to the scripts after it.
func TestMemoryEvalStatesShareNothing(t *testing.T) {
	m := New("pool")
	defer m.Close()
	for _, tc := range []struct{ change, check, want string }{
		{`string.len = function() return 42 end`, `return string.len("ab")`, "2"},
		{`tonumber = function() return 7 end`, `return tonumber("3")`, "3"},
		{`rawset(_G, "leak", 1)`, `return type(rawget(_G, "leak"))`, "nil"},
		{`getmetatable("").__index = {len = function() return 9 end}`, `return ("abc"):len()`, "3"},
		{`setmetatable(_G, nil)`, `local ok = pcall(function() leak2 = 1 end) return tostring(ok)`, "false"},
		{`redis.call = nil`, `return type(redis.call)`, "function"},
		// No store instruction: the library functions refuse the change.
		{`table.insert(_G, "leak")`, `return tostring(rawget(_G, 1))`, "nil"},
		{`pcall(table.insert, string, "leak")`, `return tostring(#string)`, "0"},
		{`setmetatable(string, nil)`, `return tostring(getmetatable(string) ~= nil)`, "true"},
	} {
		for range 3 { // more than once: the pool may hand back either state
			evalOn(t, m, nodetest.EvalCmd(tc.change+" return 1", nil))
			rep := evalOn(t, m, nodetest.EvalCmd(`local v = (function() `+tc.check+` end)() return tostring(v)`, nil))
			if got := showValue(*rep.Value); got != showValue(bulkValue(tc.want)) {
				t.Errorf("after %q, %q = %s, want %s", tc.change, tc.check, got, tc.want)
			}
		}
	}
}

// TestStoresInTables: the instruction scan finds a store into a table
// or a global wherever the compiler puts one, nested functions included,
// and none in a script that only reads and calls.
func TestStoresInTables(t *testing.T) {
	for _, tc := range []struct {
		src    string
		stores bool
	}{
		{`return redis.call('get', KEYS[1])`, false},
		{`if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return 1 end return 0`, false},
		{`local t = {1, 2, KEYS[1]} return #t`, false},
		{`local t = {a = 1} return t.a`, true}, // a constructor's named field is a store
		{`local t = {} t.x = 1 return 1`, true},
		{`local t = {} t[KEYS[1]] = 1 return 1`, true},
		{`leak = 1`, true},
		{`string.len = nil`, true},
		{`local f = function() getmetatable("").__index = {} end return 1`, true},
		{`local f = function() local g = function() _G["x"] = 1 end end return 1`, true},
	} {
		proto, err := compileLua(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if got := storesInTables(proto); got != tc.stores {
			t.Errorf("storesInTables(%q) = %v, want %v", tc.src, got, tc.stores)
		}
	}
}

// TestMemoryEvalKindOnlyCommands: the commands the node's engine has for
// the kinds' own scripts (sorted sets, TIME) are not a client script's.
func TestMemoryEvalKindOnlyCommands(t *testing.T) {
	m := New("kind-only")
	defer m.Close()
	for _, call := range []string{`'zadd', KEYS[1], 1, 'a'`, `'zcard', KEYS[1]`, `'time'`} {
		rep := evalOn(t, m, nodetest.EvalCmd(`return redis.pcall(`+call+`)`, k1))
		if rep.Value.Kind != quorum.ErrorValue || rep.Value.Str != errNotAllowed {
			t.Errorf("redis.pcall(%s) = %s, want %q", call, showValue(*rep.Value), errNotAllowed)
		}
	}
}

// TestParseScore: a sorted set's score reads as Redis reads one, the
// infinities in any case and sign included, NaN refused.
func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"inf", math.Inf(1), true}, {"+inf", math.Inf(1), true},
		{"-inf", math.Inf(-1), true}, {"+INF", math.Inf(1), true}, {"-Inf", math.Inf(-1), true},
		{"nan", 0, false}, {"x", 0, false}, {"", 0, false},
	} {
		got, ok := parseScore(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseScore(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
