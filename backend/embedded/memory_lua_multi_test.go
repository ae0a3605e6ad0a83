package embedded

var k123 = []string{"{t}k1", "{t}k2", "{t}k3"}

var luaMultiCases = []luaCase{
	{name: "GETRANGE", setup: `redis.call('set', KEYS[1], 'abcdef')`, script: `return {redis.call('getrange', KEYS[1], 0, 2), redis.call('getrange', KEYS[1], -3, -1), redis.call('getrange', KEYS[1], 2, 100), redis.call('getrange', KEYS[1], 4, 1), redis.call('getrange', KEYS[1], -1, -5), redis.call('getrange', KEYS[1], -100, 1), redis.call('getrange', KEYS[1], 0, -1), redis.call('getrange', KEYS[2], 0, 3)}`, keys: k12},
	{name: "GETRANGE of a number's end", setup: `redis.call('set', KEYS[1], 'token')`, script: `local n = tonumber(ARGV[1]); return redis.call('getrange', KEYS[1], 0, n - 1)`, keys: k1, args: []string{"0"}},
	{name: "GETRANGE word", setup: `redis.call('set', KEYS[1], 'abc')`, script: `return redis.pcall('getrange', KEYS[1], 'x', 1)['err']`, keys: k1},
	{name: "GETRANGE hash", setup: `redis.call('hset', KEYS[1], 'f', 'v')`, script: `return redis.pcall('getrange', KEYS[1], 0, 1)['err']`, keys: k1},
	{name: "GETRANGE arity", script: `return redis.pcall('getrange', KEYS[1], 0)['err']`, keys: k1},
	{name: "MGET", setup: `redis.call('set', KEYS[1], 'a'); redis.call('hset', KEYS[3], 'f', 'v')`, script: `return redis.call('mget', KEYS[1], KEYS[2], KEYS[3], KEYS[1])`, keys: k123},
	{name: "MSET", setup: `redis.call('set', KEYS[1], 'old', 'PX', 60000); redis.call('hset', KEYS[2], 'f', 'v')`, script: `return {redis.call('mset', KEYS[1], 'a', KEYS[2], 'b', KEYS[1], 'c'), redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1]), redis.call('type', KEYS[2])}`, keys: k12},
	{name: "MSET odd", script: `return redis.pcall('mset', KEYS[1], 'a', KEYS[2])['err']`, keys: k12},
	{name: "MSET arity", script: `return redis.pcall('mset', KEYS[1])['err']`, keys: k1},
	{name: "MSETNX", script: `return {redis.call('msetnx', KEYS[1], 'a', KEYS[2], 'b'), redis.call('msetnx', KEYS[2], 'x', KEYS[3], 'y'), redis.call('mget', KEYS[1], KEYS[2], KEYS[3]), redis.call('pttl', KEYS[1])}`, keys: k123},
	{name: "MSETNX over a hash", setup: `redis.call('hset', KEYS[2], 'f', 'v')`, script: `return {redis.call('msetnx', KEYS[1], 'a', KEYS[2], 'b'), redis.call('exists', KEYS[1])}`, keys: k12},
	{name: "MSETNX odd", script: `return redis.pcall('msetnx', KEYS[1], 'a', KEYS[2])['err']`, keys: k12},
	{name: "MSETNX then PEXPIRE each", script: `local kv = {}; for _, k in ipairs(KEYS) do table.insert(kv, k); table.insert(kv, ARGV[1]) end; local n = redis.call('msetnx', unpack(kv)); for _, k in ipairs(KEYS) do redis.call('pexpire', k, 60000) end; return {n, redis.call('mget', unpack(KEYS))}`, keys: k123, args: []string{"tok"}},
}

// luaNumberCases: tonumber reads strings as Redis's Lua does, and SELECT
// of the result lands where Redis's does (or fails as it does).
var luaNumberCases = func() []luaCase {
	in := []string{"3", "0x3", "0X3", " 3 ", "\v3\f", "3.0", "1e0", ".3e1", "3.", "+3", "0x1p1", "0x1.8p1", "-0x3",
		"3\x00junk", "1e-400", "1e400", "inf", "-infinity", "nan", "0x", "3e", "3abc", "", "-0", "03", "99999999999999999"}
	show := `local function show(n)
  if n == nil then return 'nil' elseif n ~= n then return 'nan' elseif n == 1/0 then return 'inf'
  elseif n == -1/0 then return '-inf' elseif n == 0 and 1/n < 0 then return '-0' end
  return string.format('%.17g', n)
end
`
	cases := []luaCase{{name: "tonumber", script: show + `local out = {} for i, a in ipairs(ARGV) do out[i] = show(tonumber(a)) end return out`, keys: k1, args: in},
		{name: "tonumber of numbers and others", script: show + `return {show(tonumber(3)), show(tonumber(nil)), show(tonumber(true)), show(tonumber('10', 10)), show(tonumber('ff', 16)), show(tonumber('z', 36))}`, keys: k1}}
	for _, a := range []string{"0x3", "1e0", "0x1p1", "3.5", "-0", "16", "x"} {
		cases = append(cases, luaCase{name: "SELECT of tonumber " + a, script: `redis.pcall('select', tonumber(ARGV[1])); redis.call('set', KEYS[1], 'v'); return redis.pcall('select', tonumber(ARGV[1]))`, keys: k1, args: []string{a}})
	}
	return cases
}()
