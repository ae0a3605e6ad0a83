package scriptcheck

import (
	"fmt"
	"strings"
	"testing"
)

// multiKeyObtain takes every key with MSETNX of a table of key, value
// pairs, lets a holder whose token prefixes every key take them again
// with MSET, and gives each key its expiry in a local function: the shape
// of bsm/redislock's multi-key obtain.
const multiKeyObtain = `
local function expireAll(ms)
  for _, k in ipairs(KEYS) do
    redis.call('pexpire', k, ms)
  end
end
local function ownsAll()
  local n = tonumber(ARGV[2])
  for _, k in ipairs(KEYS) do
    if redis.call('getrange', k, 0, n - 1) ~= string.sub(ARGV[1], 1, n) then
      return false
    end
  end
  return true
end
local kv = {}
for _, k in ipairs(KEYS) do
  table.insert(kv, k)
  table.insert(kv, ARGV[1])
end
if redis.call('msetnx', unpack(kv)) ~= 1 then
  if not ownsAll() then return false end
  redis.call('mset', unpack(kv))
end
expireAll(ARGV[3])
return redis.status_reply('OK')`

// multiKeyRelease reads every key with MGET and deletes them all when
// each holds the token.
const multiKeyRelease = `
local vals = redis.call('mget', unpack(KEYS))
for i, _ in ipairs(KEYS) do
  if vals[i] ~= ARGV[1] then return false end
end
redis.call('del', unpack(KEYS))
return redis.status_reply('OK')`

// chain is n local functions, each calling the one before twice: steps
// exponential in n.
func chain(n int) string {
	var b strings.Builder
	b.WriteString("local function f0() local x = 1 end\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "local function f%d() f%d() f%d() end\n", i, i-1, i-1)
	}
	fmt.Fprintf(&b, "f%d()", n)
	return b.String()
}

func TestCheckAdmitsBounded(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"reads that change nothing", `return {redis.call('GETRANGE', KEYS[1], 0, 3), redis.call('MGET', unpack(KEYS)), redis.call('MGET', KEYS[1], KEYS[2])}`},
		{"mset then pexpire each", `redis.call('MSET', KEYS[1], ARGV[1], KEYS[2], ARGV[1]); redis.call('PEXPIRE', KEYS[2], ARGV[2]); redis.call('PEXPIRE', KEYS[1], ARGV[2]); return 1`},
		{"msetnx then set px", `if redis.call('MSETNX', KEYS[1], ARGV[1]) == 1 then return 1 end; redis.call('SET', KEYS[1], ARGV[1], 'px', 100)`},
		{"mset of unpack KEYS, expiry in a numeric loop", `redis.call('MSET', unpack(KEYS)); for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], 100) end`},
		{"multi-key obtain", multiKeyObtain},
		{"multi-key release", multiKeyRelease},
		{"one loop over the request with literal loops inside", `local n = 0; for i = 1, #ARGV do for j = 1, 3 do n = n + j end end; return n`},
		{"sequential loops over the request", `for _, k in ipairs(KEYS) do redis.call('GET', k) end; for i = 1, #ARGV do end; local r = redis.call('HGETALL', KEYS[1]); for _, v in ipairs(r) do end`},
		{"a function with a loop called once", `local function f() for i = 1, #ARGV do end end; f(); f()`},
		{"plain find of an argument", `return string.find(ARGV[1], ARGV[2], 1, true)`},
		{"literal patterns without quantifiers", `return {string.match(KEYS[1], '^{(.)}$'), ARGV[1]:find('[%w_%-]:%d'), string.gsub(ARGV[1], '[*+?-]', '.'), ARGV[1]:sub(1, 3)}`},
		{"gsub with a short literal replacement", `return string.gsub(ARGV[1], '[:]', '%%')`},
		{"unpack beside loops", `local n = #KEYS; for i = 1, #ARGV do end; redis.call('DEL', unpack(KEYS)); return table.getn(ARGV)`},
		{"string.rep of a literal count", `return string.rep('-', 10) .. ARGV[1]:rep(2)`},
		{"a short chain of calls", chain(10)},
		{"a key built once from its parts", `local k = KEYS[1] .. ':' .. ARGV[1]; k = k .. ':lock'; local n = 0; for i = 1, #KEYS do local m = KEYS[i] .. ':' .. k; n = n + #m end; return {k, n}`},
		{"trivially bounded loops", `while false do redis.call('GET', KEYS[1]) end; repeat local x = redis.call('GET', KEYS[1]); if x then break end until true; return 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Check(tc.src); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}
}

// tripleLoop is the script of issue 22 item 5: 600 ARGV make every
// backend busy for seconds.
const tripleLoop = `local n=0 for i=1,#ARGV do for j=1,#ARGV do for k=1,#ARGV do n=n+1 end end end return n`

func TestCheckRefusesUnbounded(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"triple loop over ARGV", tripleLoop, "a loop over #ARGV nested in a loop over #ARGV"},
		{"a string doubled in a literal loop", `local s = ARGV[1]; for i = 1, 40 do s = s .. s end; return #s`, "unbounded memory"},
		{"a string doubled line by line", `local s = ARGV[1]; local t = s .. s; t = t .. '-' .. t; return t`, "a string concatenated with itself ('s' .. 's'"},
		{"a string grown across a literal loop", `local s = ''; for i = 1, 100000 do s = s .. ARGV[1] end; return #s`, "a string built up across a loop's iterations ('s' = s .. …"},
		{"a string grown across a loop over KEYS", `local s = ''; for _, k in ipairs(KEYS) do s = k .. s end; return s`, "a string built up across a loop's iterations ('s' = s .. …"},
		{"while of a value", `local go = ARGV[1]; while go do go = false end`, "a while loop (unbounded running time)"},
		{"repeat until a value", `repeat until ARGV[1]`, "a repeat loop (unbounded running time)"},
		{"repeat until false", `repeat until false`, "a repeat loop (unbounded running time)"},
		{"KEYS loop in an ARGV loop", `for i = 1, #ARGV do for _, k in ipairs(KEYS) do end end`, "a loop over KEYS nested in a loop over #ARGV"},
		{"ARGV loop in a KEYS loop", `for i = 1, #KEYS do for i, v in pairs(ARGV) do end end`, "a loop over ARGV nested in a loop over #KEYS"},
		{"reply loop in a KEYS loop", `for _, k in ipairs(KEYS) do local r = redis.call('HGETALL', k); for _, v in ipairs(r) do end end`, "a loop over the reply 'r' nested in a loop over KEYS"},
		{"nested through a call", `local function f() for i = 1, #ARGV do end end; for _, k in ipairs(KEYS) do f() end`, "nested, through a call, in a loop over KEYS"},
		{"exponential calls", chain(40), "loops and calls of more than"},
		{"expensive body of a request loop", `for i = 1, #ARGV do for j = 1, 1000 do redis.call('GET', KEYS[1]) end end`, "loops and calls of more than"},
		{"many commands in literal loops", `for i = 1, 1000000 do redis.call('GET', KEYS[1]) end`, "loops and calls of more than"},
		{"pattern from an argument", `return string.find(KEYS[1], ARGV[1])`, "string.find with a pattern that is not a literal"},
		{"pattern built from an argument", `return string.match(ARGV[2], ARGV[1] .. '*b')`, "string.match with a pattern that is not a literal"},
		{"backtracking literal", `return string.find(ARGV[1], 'a*a*a*a*a*a*b')`, `string.find with the pattern "a*a*a*a*a*a*b", whose '*' backtracks`},
		{"quantifier in a method call", `return ARGV[1]:match('(%d+)')`, "string.match with the pattern \"(%d+)\", whose '+' backtracks"},
		{"lazy quantifier", `return string.gsub(ARGV[1], 'a.-b', '')`, "whose '-' backtracks"},
		{"optional item", `return ARGV[1]:find('ab?')`, "whose '?' backtracks"},
		{"balanced match", `return string.gsub(ARGV[1], '%b()', '')`, "whose %b backtracks"},
		{"gmatch of an argument", `local f = string.gmatch(ARGV[1], ARGV[2])`, "string.gmatch with a pattern that is not a literal"},
		{"find not plain", `return string.find(ARGV[1], ARGV[2], 1, false)`, "string.find with a pattern that is not a literal"},
		{"gsub replaced by an argument", `return string.gsub(ARGV[1], '.', ARGV[1])`, "string.gsub with a replacement that is not a literal"},
		{"gsub replaced by a long literal", "return ARGV[1]:gsub('.', '" + strings.Repeat("x", 65) + "')", "string.gsub with a replacement that is not a literal of at most 64 bytes"},
		{"unpack KEYS in a loop over ARGV", `for i = 1, #ARGV do redis.call('DEL', unpack(KEYS)) end`, "unpack(KEYS) in a loop over #ARGV"},
		{"unpack ARGV in a reply loop", `local r = redis.call('HGETALL', KEYS[1]); for _, v in ipairs(r) do local t = {unpack(ARGV)} end`, "unpack(ARGV) in a loop over the reply 'r'"},
		{"unpack in a function called in a loop", `local function f() return redis.call('DEL', unpack(KEYS)) end; for _, a in ipairs(ARGV) do f() end`, "nested, through a call, in a loop over ARGV"},
		{"rep of an argument's count", `return string.rep('x', tonumber(ARGV[1]))`, "string.rep with a count that is not a literal"},
		{"rep of a huge literal", `return ('x'):rep(1e9)`, "string.rep with a count that is not a literal of at most 64"},
		{"mset without expiry", `redis.call('MSET', KEYS[1], ARGV[1]); return 1`, "command 'MSET' leaves keys without expiry"},
		{"msetnx expiry in a branch", `redis.call('MSETNX', KEYS[1], 1); if ARGV[1] then redis.call('PEXPIRE', KEYS[1], 5) end`, "command 'MSETNX' leaves keys without expiry"},
		{"mset expiry of another key", `redis.call('MSET', KEYS[1], 1, KEYS[2], 2); redis.call('PEXPIRE', KEYS[1], 5)`, "command 'MSET' leaves keys without expiry"},
		{"mset expiry before it", `redis.call('PEXPIRE', KEYS[1], 5); redis.call('MSET', KEYS[1], 1)`, "command 'MSET' leaves keys without expiry"},
		{"mset returns before the expiry", `redis.call('MSET', KEYS[1], 1) do return 1 end redis.call('PEXPIRE', KEYS[1], 5)`, "command 'MSET' leaves keys without expiry"},
		{"mset set without px after", `redis.call('MSET', KEYS[1], 1); redis.call('SET', KEYS[1], 2)`, "command 'MSET' leaves keys without expiry"},
		{"mset key from ARGV", `redis.call('MSET', ARGV[1], KEYS[1]); redis.call('PEXPIRE', KEYS[1], 5)`, "key ARGV[…] is not from KEYS (command 'MSET')"},
		{"mset pair table key from ARGV", `local t = {}; table.insert(t, ARGV[1]); table.insert(t, KEYS[1]); redis.call('MSET', unpack(t)); redis.call('PEXPIRE', KEYS[1], 5)`, "key ARGV[…] is not from KEYS (a key of the table 't'"},
		{"mset table of one insert", `local t = {}; table.insert(t, KEYS[1]); redis.call('MSET', unpack(t))`, "the table 't' given to MSET is not built of key, value pairs"},
		{"mset table changed otherwise", `local t = {}; table.insert(t, KEYS[1]); table.insert(t, 1); t[1] = ARGV[1]; redis.call('MSET', unpack(t))`, "the table 't' given to MSET is not built of key, value pairs"},
		{"mset table passed", `local t = {}; table.insert(t, KEYS[1]); table.insert(t, 1); local u = t; redis.call('MSET', unpack(t))`, "the table 't' given to MSET is not built of key, value pairs"},
		{"mset table not empty at first", `local t = {ARGV[1], 1}; table.insert(t, KEYS[1]); table.insert(t, 1); redis.call('MSET', unpack(t))`, "the table 't' given to MSET is not built of key, value pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.src)
			if err == nil {
				t.Fatalf("Check admitted %q", tc.src)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "ERR redlockd cannot replicate this script: ") || !strings.Contains(msg, tc.want) || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

func TestArgsOK(t *testing.T) {
	many := make([]string, MaxArgs+1)
	for _, tc := range []struct {
		name       string
		keys, args []string
		want       string
	}{
		{"within the caps", many[:MaxKeys], many[:MaxArgs], ""},
		{"too many keys", many, nil, "1025 keys (at most 1024)"},
		{"too many arguments", nil, many, "1025 arguments (at most 1024)"},
		{"too large", []string{"k"}, []string{strings.Repeat("x", MaxArgBytes)}, "keys and arguments of 1048577 bytes (at most 1 MiB in all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ArgsOK(tc.keys, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
