package scriptcheck

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var noDB = Info{DB: -1}

// sesameInfo: @sesamecare-oss/redlock's scripts start with
// redis.pcall("SELECT", tonumber(ARGV[1])) on their fourth line.
var sesameInfo = Info{Writes: true, DBArg: 1, DB: -1, DBArgNumber: true, DBArgPcall: true, DBLine: 4}

func writes(i Info) Info { i.Writes = true; return i }

// admittedCases: one per admitted family and per construct the check
// follows.
var admittedCases = []struct {
	name string
	src  string
	want Info
}{
	{"string read", `return redis.call('GET', KEYS[1])`, noDB},
	{"string claim", `return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`, writes(noDB)},
	{"string forms", `redis.call('SETNX', KEYS[1], ARGV[1]); redis.call('SETEX', KEYS[1], 10, ARGV[1]); redis.call('PSETEX', KEYS[1], 10, ARGV[1]); return redis.call('GETDEL', KEYS[1])`, writes(noDB)},
	{"string reads", `return {redis.call('EXISTS', KEYS[1], KEYS[2]), redis.call('STRLEN', KEYS[1]), redis.call('TYPE', KEYS[1])}`, noDB},
	{"delete every key", `return redis.call('DEL', unpack(KEYS))`, writes(noDB)},
	{"unlink", `return redis.call('UNLINK', KEYS[1], KEYS[2])`, writes(noDB)},
	{"ttl reads", `return {redis.call('PTTL', KEYS[1]), redis.call('TTL', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1]), redis.call('EXPIRETIME', KEYS[1])}`, noDB},
	{"ttl writes", `redis.call('EXPIRE', KEYS[1], 5); redis.call('PEXPIREAT', KEYS[1], ARGV[1]); redis.call('EXPIREAT', KEYS[1], ARGV[1]); return redis.call('pexpire', KEYS[1], ARGV[2])`, writes(noDB)},
	{"hash reentrant lock", `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil end; redis.call('HSET', KEYS[1], ARGV[2], 1); redis.call('HSETNX', KEYS[1], 'x', 1); redis.call('HMSET', KEYS[1], 'a', 1, 'b', 2); return redis.call('HDEL', KEYS[1], 'a', 'b')`, writes(noDB)},
	{"hash reads", `return {redis.call('HGET', KEYS[1], 'f'), redis.call('HLEN', KEYS[1]), redis.call('HGETALL', KEYS[1]), redis.call('HKEYS', KEYS[1]), redis.call('HVALS', KEYS[1]), redis.call('HMGET', KEYS[1], 'a', 'b')}`, noDB},
	{"publish alone", `return redis.call('PUBLISH', ARGV[1], ARGV[2])`, Info{DB: -1, Publishes: true}},
	{"select literal", "redis.call('SELECT', 3)\nreturn redis.call('GET', KEYS[1])", Info{DB: 3}},
	{"select argv", `redis.pcall("select", tonumber(ARGV[1])) return redis.call('DEL', KEYS[1])`, Info{Writes: true, DBArg: 1, DB: -1, DBArgNumber: true, DBArgPcall: true, DBLine: 1}},
	{"select hex literal", "redis.call('SELECT', 0x3)\nreturn redis.call('GET', KEYS[1])", Info{DB: 3}},
	{"select failing literal through pcall", "redis.pcall('SELECT', '03')\nreturn redis.call('GET', KEYS[1])", noDB},
	{"select bare argv", "\nredis.call('SELECT', ARGV[2]) return 1", Info{DBArg: 2, DB: -1, DBLine: 2}},
	{"key locals", `local k = KEYS[1]; local j = k; local m; m = j; return redis.call('GET', m)`, noDB},
	{"for over KEYS", `for _, key in ipairs(KEYS) do redis.call('DEL', key) end; for i, k in pairs(KEYS) do redis.call('PEXPIRE', k, ARGV[1]) end`, writes(noDB)},
	{"numeric for", `for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end; for i = 10, 1, -1 do end; for i = #ARGV, 1, -1 do end`, writes(noDB)},
	{"local function", `local function get(i) return redis.call('GET', KEYS[i]) end; local f = function(x) return x end; return f(get(1))`, noDB},
	{"reply loop", `local r = redis.call('HGETALL', KEYS[1]); local n = 0; for _, v in ipairs(r) do n = n + #v end; return n`, noDB},
	{"pure helpers", `local t = cjson.decode(ARGV[1]); local s = string.format('%s', tostring(t.v)):upper(); return redis.call('SET', KEYS[1], s, 'PX', math.max(1, tonumber(ARGV[2])))`, writes(noDB)},
	{"redis helpers", `redis.replicate_commands(); redis.setresp(3); redis.log(redis.LOG_NOTICE, 'x'); if false then return redis.error_reply('no') end; return redis.status_reply(redis.sha1hex(ARGV[1]))`, noDB},
	{"shebang", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", noDB},
	{"command names any case", `return redis.call('Get', KEYS[1])`, noDB},
}

func TestCheckAdmits(t *testing.T) {
	for _, tc := range admittedCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check(tc.src)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Info = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// refusedCases: one per refused family and per construct that escapes the
// check; want is a part of the error.
var refusedCases = []struct {
	name string
	src  string
	want string
}{
	{"sorted set", `return redis.call('ZADD', KEYS[1], 1, ARGV[1])`, "command 'ZADD' (sorted set) is not an exclusive, expiring claim; a counting semaphore is LOCK key ttl PERMITS n, because a majority vote over per-node counts does not bound the holders"},
	{"any Z command", `return redis.call('zcard', KEYS[1])`, "command 'ZCARD' (sorted set)"},
	{"list", `return redis.call('LPUSH', KEYS[1], 1)`, "command 'LPUSH' (list)"},
	{"set", `return redis.call('SADD', KEYS[1], 1)`, "command 'SADD' (set)"},
	{"stream", `return redis.call('XADD', KEYS[1], '*', 'a', 1)`, "command 'XADD' (stream)"},
	{"counter", `return redis.call('INCR', KEYS[1])`, "command 'INCR' (counter)"},
	{"keys scan", `return redis.call('KEYS', '*')`, "command 'KEYS' (keyspace scan)"},
	{"scan", `return redis.call('SCAN', 0)`, "command 'SCAN' (keyspace scan)"},
	{"server", `return redis.call('FLUSHALL')`, "command 'FLUSHALL' (server command)"},
	{"eval from a script", `return redis.call('EVAL', 'return 1', 0)`, "command 'EVAL' (script call)"},
	{"persist", `return redis.call('PERSIST', KEYS[1])`, "command 'PERSIST' (no expiry)"},
	{"rename", `return redis.call('RENAME', KEYS[1], KEYS[2])`, "command 'RENAME' (key move)"},
	{"subscribe", `return redis.call('SUBSCRIBE', 'c')`, "command 'SUBSCRIBE' (pub/sub)"},
	{"other command", `return redis.call('ECHO', 'x')`, "command 'ECHO' is not an exclusive, expiring claim"},
	{"literal key", `return redis.call('GET', 'foo')`, `key "foo" is not from KEYS`},
	{"number key", `return redis.call('GET', 1)`, "key 1 is not from KEYS"},
	{"argv key", `return redis.call('GET', ARGV[1])`, "key ARGV[…] is not from KEYS"},
	{"concatenated key", `return redis.call('GET', KEYS[1] .. ':x')`, "key built by concatenation is not from KEYS"},
	{"global key", `return redis.call('GET', foo)`, "the global 'foo' is not known"},
	{"local also assigned argv", `local k = KEYS[1]; if ARGV[1] then k = ARGV[1] end; return redis.call('GET', k)`, "key 'k' is not from KEYS"},
	{"taint through a chain", `local a = KEYS[1]; local b = a; local c = b; a = 'x'; return redis.call('DEL', c)`, "key 'c' is not from KEYS"},
	{"parameter key", `local function del(k) return redis.call('DEL', k) end; return del(KEYS[1])`, "key 'k' is not from KEYS"},
	{"loop index as key", `for i, k in ipairs(KEYS) do redis.call('GET', i) end`, "key 'i' is not from KEYS"},
	{"unpack argv as keys", `return redis.call('DEL', KEYS[1], unpack(ARGV))`, "is not from KEYS"},
	{"unpack keys not last", `return redis.call('DEL', unpack(KEYS), 'x')`, "is not from KEYS"},
	{"extra call result", `local a, b = KEYS[1], string.byte('x'); return redis.call('GET', b)`, "key 'b' is not from KEYS"},
	{"computed command", `return redis.call(KEYS[2], KEYS[1])`, "a command name computed at run time"},
	{"command built from an argument", `return redis.call(ARGV[1] .. 'x', KEYS[1])`, "a command name computed at run time"},
	{"no command", `return redis.call()`, "without a command"},
	{"aliased call", `local c = redis.call; return c('GET', KEYS[1])`, "redis.call used as a value"},
	{"passed call", `return pcall(redis.pcall, 'GET', KEYS[1])`, "redis.pcall used as a value"},
	{"stored call", `local t = {redis.call}; return 1`, "redis.call used as a value"},
	{"computed redis field", `return redis[ARGV[1]]('GET', KEYS[1])`, "a field of redis computed at run time"},
	{"redis as value", `local r = redis; return r.call('GET', KEYS[1])`, "redis used as a value"},
	{"loadstring", `return loadstring(ARGV[1])()`, "'loadstring' escapes the check"},
	{"load", `return load(ARGV[1])`, "'load' escapes the check"},
	{"dofile", `dofile('x')`, "'dofile' escapes the check"},
	{"getfenv", `local e = getfenv(1)`, "'getfenv' escapes the check"},
	{"setfenv", `setfenv(1, {})`, "'setfenv' escapes the check"},
	{"rawset", `rawset(KEYS, 1, 'x')`, "'rawset' escapes the check"},
	{"setmetatable", `setmetatable(ARGV, {})`, "'setmetatable' escapes the check"},
	{"_G", `return _G.redis.call('GET', 'x')`, "'_G' escapes the check"},
	{"assign KEYS", `KEYS = {'foo'}; return redis.call('GET', KEYS[1])`, "an assignment to the global 'KEYS'"},
	{"assign KEYS element", `KEYS[1] = 'foo'; return redis.call('GET', KEYS[1])`, "an assignment to a field of the global 'KEYS'"},
	{"assign redis", `redis = {}`, "an assignment to the global 'redis'"},
	{"assign redis.call", `redis.call = function() end`, "a field of the global 'redis'"},
	{"global variable", `x = 1`, "an assignment to the global 'x'"},
	{"global function", `function f() end`, "a function stored in a global"},
	{"local KEYS", `local KEYS = {'foo'}; return redis.call('GET', KEYS[1])`, "a local named 'KEYS' shadows the global"},
	{"local redis", `local redis = {call = function() end}`, "a local named 'redis' shadows the global"},
	{"KEYS modified", `table.insert(KEYS, 'foo'); return redis.call('GET', KEYS[2])`, "KEYS used as a value"},
	{"KEYS aliased", `local t = KEYS; t[1] = 'foo'`, "KEYS used as a value"},
	{"breakpoint", `redis.breakpoint()`, "redis.breakpoint"},
	{"debug", `redis.debug('x')`, "redis.debug"},
	{"while", `while true do end`, "a while loop (unbounded running time)"},
	{"repeat", `repeat until false`, "a repeat loop (unbounded running time)"},
	{"goto", "::top:: goto top", "goto (unbounded running time)"},
	{"numeric for over argv", `for i = 1, tonumber(ARGV[1]) do end`, "numeric for loop whose bounds are not literals"},
	{"numeric for step zero", `for i = 1, 2, 0 do end`, "step is not a non-zero literal"},
	{"numeric for huge", `for i = 1, 1e12 do end`, "unbounded running time"},
	{"nested numeric for", `for i = 1, 2000 do for j = 1, 2000 do end end`, "unbounded running time"},
	{"generic for over next", `for k, v in next, ARGV do end`, "a for loop over an iterator the check cannot follow"},
	{"generic for over a table", `local t = {}; for k, v in pairs(t) do end`, "'t', a table that is not an unchanged redis reply"},
	{"reply changed in its loop", `local r = redis.call('HGETALL', KEYS[1]); for _, v in ipairs(r) do table.insert(r, v) end`, "not an unchanged redis reply"},
	{"reply aliased", `local r = redis.call('HGETALL', KEYS[1]); local q = r or {}; for _, v in ipairs(r) do q[#q+1] = v end`, "not an unchanged redis reply"},
	{"recursive", `local function f(n) if n > 0 then return f(n - 1) end return 0 end; return f(10)`, "the recursive function 'f' (unbounded running time)"},
	{"recursive through inner", `local function f() local function g() return f() end return g() end`, "the recursive function 'f'"},
	{"function as value", `local function f() end; local t = {f}`, "the function 'f' used as a value"},
	{"function reassigned", `local function f() end; f = nil`, "an assignment to the function 'f'"},
	{"anonymous function", `return pcall(function() return 1 end)`, "a function used as a value"},
	{"method-stored function", `local t = {}; function t.f() end`, "a function stored in a global or a table field"},
	{"call of a value", `local t = cjson.decode(ARGV[1]); return t.f()`, "a call of a value the check cannot follow"},
	{"select not first", `redis.call('GET', KEYS[1]); redis.call('SELECT', 1)`, "SELECT only as the script's first command"},
	{"select twice", `redis.call('SELECT', 1); redis.call('SELECT', 2)`, "SELECT only as the script's first command"},
	{"select in a branch", `if ARGV[1] then redis.call('SELECT', 1) end`, "SELECT inside a branch"},
	{"select computed", `redis.call('SELECT', ARGV[1] + 1)`, "SELECT of a db computed at run time"},
	{"select literal with a leading zero", `redis.call('SELECT', '03')`, `SELECT of db "03" (value is not an integer or out of range; the proxy has dbs 0 to 15)`},
	{"select fraction literal", `redis.call('SELECT', 3.5)`, `SELECT of db "3.5"`},
	{"select out of range", `redis.call('SELECT', 16)`, `SELECT of db "16"`},
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range refusedCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.src)
			if err == nil {
				t.Fatalf("Check admitted %q", tc.src)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "ERR redlockd cannot replicate this script: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to contain %q", msg, tc.want)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error %q is not one line", msg)
			}
		})
	}
}

func TestCheckSyntaxError(t *testing.T) {
	_, err := Check("local x = 1\nreturn redis.call('GET', KEYS[1]")
	const want = "ERR Error compiling script (new function): user_script"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.ContainsAny(err.Error(), "\r\n") {
		t.Fatalf("error %v, want one line starting %q", err, want)
	}
	if !strings.Contains(err.Error(), "user_script:2:") && !strings.Contains(err.Error(), "<eof>") {
		t.Fatalf("error %v does not say where", err)
	}
}

// TestCheckLongNames: names taken from the script are cut in errors.
func TestCheckLongNames(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, src := range []string{
		"return redis.call('" + long + "', KEYS[1])",
		"return redis.call('GET', '" + long + "')",
		"return " + long + "()",
		"local " + long + " = 1; " + long + "()",
		"return '" + long,
	} {
		_, err := Check(src)
		if err == nil || len(err.Error()) > 700 || strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("error of %d bytes: %.100v…, want a short one-line refusal", len(fmt.Sprint(err)), err)
		}
	}
}

func TestCheckBounds(t *testing.T) {
	big := "return 1 --" + strings.Repeat("x", MaxSize)
	if _, err := Check(big); err == nil || !strings.Contains(err.Error(), "over 64 KiB") {
		t.Fatalf("a body over 64 KiB: %v", err)
	}
	for name, src := range map[string]string{
		"nots":   "return " + strings.Repeat("not ", 5000) + "1",
		"ifs":    strings.Repeat("if true then ", 3000) + strings.Repeat("end ", 3000),
		"concat": "return KEYS[1]" + strings.Repeat(" .. KEYS[1]", 5000),
		"tables": "return " + strings.Repeat("{", 5000) + strings.Repeat("}", 5000),
	} {
		_, err := Check(src)
		if err == nil || strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("%s: %v, want a one-line refusal", name, err)
		}
	}
}

// libraryScripts are the lock scripts of client libraries, byte for byte
// in testdata (first line: their origin), with the SHA1 they send them by.
// Empty refusal: admitted with info.
var libraryScripts = []struct {
	file    string
	sha     string
	info    Info
	refusal string
}{
	{"known_compare_and_delete.lua", "b70c2384248f88e6b75b9f89241a180f856ad852", writes(noDB), ""},
	{"known_go-redsync_v4_delete.lua", "e950836ed1e694540c503ef9972b8de518044d3b", writes(noDB), ""},
	{"known_go-redsync_v4_touch.lua", "d75bb8b5bd13532ddedd17762e772346e39b321e", writes(noDB), ""},
	{"known_go-redsync_v4_touch-or-setnx.lua", "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79", writes(noDB), ""},
	{"known_node-redlock_4.0.0_acquire.lua", "d01fb69e6ecc8bad3ca9bacba9f4f9e96862313f", writes(noDB), ""},
	{"known_node-redlock_4.0.0_extend.lua", "acaf90b4697bb48bb5f603e9e613a54df7536c70", writes(noDB), ""},
	{"known_node-redlock_4.0.0-4.1.0_release.lua", "517e7ed95f00c0c4a209c6a7afcc6ab797d30b85", writes(noDB), ""},
	{"known_node-redlock_4.1.0-4.2.0_acquire.lua", "e5a322e2634ef59a516e8ea150cb085afafee684", writes(noDB), ""},
	{"known_node-redlock_4.1.0_extend.lua", "1d48b4c6fea2cdadc46b3346de5c2eaf121c7bb3", writes(noDB), ""},
	{"known_node-redlock_4.2.0_extend.lua", "ce46f80993d5dac20dd066eb301a4e37994bdbed", writes(noDB), ""},
	{"known_node-redlock_4.2.0_release.lua", "0f0f23b9048b36752b5be114f357ba083449f908", writes(noDB), ""},
	{"known_node-redlock_5_acquire.lua", "96da70f7716f27d278a5218544df37fd8b0a5e4c", writes(noDB), ""},
	{"known_node-redlock_5_extend.lua", "aed6f382e410db8ba7926d4e5e9aab410bf2a78a", writes(noDB), ""},
	{"known_node-redlock_5_release.lua", "e4612211c9f8f51c257e26e056b0a654b3187242", writes(noDB), ""},
	{"known_pottery_Redlock_acquired-ttl.lua", "f5f7bd3a3aa4a63c507c1155c5ea1219b350d992", noDB, ""},
	{"known_pottery_Redlock_extend.lua", "ba015a80261b616e7a62d35df0b8e3edbe6c9414", writes(noDB), ""},
	{"known_pottery_Redlock_release.lua", "a4aada0b36710970eedaaaeec4a6b7d8c78c4f80", writes(noDB), ""},
	{"known_redis-py_Lock_extend.lua", "a4e8783852e6b949f9ef3a97212805108459a890", writes(noDB), ""},
	{"known_redis-py_Lock_reacquire.lua", "1cac51482acf5858da00f6d685d68f886cd6b6b2", writes(noDB), ""},
	{"known_redis-py_Lock_release.lua", "c3f8721cbb97f72bc19e972846bd7aaf91901658", writes(noDB), ""},
	{"redis_semaphore_5.7_mutex_release.lua", "7157921a7cc7cfba979acf6d63f073151df17d12", writes(noDB), ""},
	{"redis_semaphore_5.7_mutex_refresh.lua", "594683e49a64ebaf975caf5f8079a1d097c438f1", writes(noDB), ""},
	{"redis_semaphore_5.7_semaphore_acquire.lua", "43ebdb49120d170e08af560cb4e46e36f8585936", Info{}, "(sorted set) is not an exclusive, expiring claim; a counting semaphore is LOCK key ttl PERMITS n"},
	{"redis_semaphore_5.7_semaphore_refresh.lua", "999a49a1d07671a8027165641001f5bad44608b3", Info{}, "a counting semaphore is LOCK key ttl PERMITS n"},
	{"sesamecare_redlock_1.4_acquire.lua", "1b77b94aa78451d55dfa97e18819bfbfc596cb5b", sesameInfo, ""},
	{"sesamecare_redlock_1.4_extend.lua", "820e9778d2b6733e9ed771e4be90ae73a95a6f3b", sesameInfo, ""},
	{"sesamecare_redlock_1.4_release.lua", "df51f6837dcfe303d334e6abea9aeae192bab216", sesameInfo, ""},
	{"redisson_3.17.7_lock.lua", "dad0f8d619e548e04f21fb48d50be5034df3adae", writes(noDB), ""},
	{"redisson_3.17.7_unlock.lua", "3ffe249c16dee540ac8ab32e39bd408626b9aff7", Info{Writes: true, DB: -1, Publishes: true}, ""},
	{"redisson_3.17.7_renew.lua", "8e19a1ddbdee9138df9f32a480c57addab4353d1", writes(noDB), ""},
	{"redisson_3.45.1_lock.lua", "149c5a8bf18676fd99e9e6e24923bd64d9b62f94", writes(noDB), ""},
	{"redisson_3.45.1_unlock.lua", "6866459238a13a701d42f4971f12d9f3a50e2442", Info{Writes: true, DB: -1, Publishes: true, NameArgs: []int{4}}, ""},
}

// readScript is a testdata script's body (its first line, the origin, is
// not part of it).
func readScript(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.IndexByte(s, '\n')
	if i < 0 || !strings.HasPrefix(s, "-- ") {
		t.Fatalf("%s: no origin line", file)
	}
	return s[i+1:]
}

func TestCheckLibraryScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(libraryScripts) {
		t.Fatalf("%d scripts in testdata, %d in the table", len(files), len(libraryScripts))
	}
	for _, ls := range libraryScripts {
		t.Run(ls.file, func(t *testing.T) {
			body := readScript(t, ls.file)
			sum := sha1.Sum([]byte(body))
			if got := hex.EncodeToString(sum[:]); got != ls.sha {
				t.Fatalf("SHA1 %s, want %s: the body is not the library's", got, ls.sha)
			}
			info, err := Check(body)
			switch {
			case ls.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case ls.refusal == "" && !reflect.DeepEqual(info, ls.info):
				t.Fatalf("Info = %+v, want %+v", info, ls.info)
			case ls.refusal != "" && (err == nil || !strings.Contains(err.Error(), ls.refusal)):
				t.Fatalf("error %v, want it to contain %q", err, ls.refusal)
			}
		})
	}
}

// TestCommandNamedByArgument: a command named by ARGV[n] (Redisson's
// unlock publishes with the command its client passes) is admitted as a
// publish, and the value is checked when the script runs.
func TestCommandNamedByArgument(t *testing.T) {
	info, err := Check(`redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1`)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Writes: true, DB: -1, Publishes: true, NameArgs: []int{4}}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("Info = %+v, want %+v", info, want)
	}
	for _, tc := range []struct {
		args []string
		want string // "" admitted; else part of the error
	}{
		{[]string{"0", "30000", "id", "publish"}, ""},
		{[]string{"0", "30000", "id", "SPUBLISH"}, ""},
		{[]string{"0", "30000", "id", "set"}, "command 'set' named by ARGV[4]: only PUBLISH or SPUBLISH"},
		{[]string{"0", "30000", "id", "flushall"}, "command 'flushall' named by ARGV[4]"},
		{[]string{"0"}, "ARGV[4] names a command but is missing"},
	} {
		err := ArgNamesOK(info, tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}
