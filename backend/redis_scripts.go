package backend

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script the node runs by EVALSHA, falling back to EVAL
// when the server does not hold it. Redis caches scripts by the SHA1 of
// the exact text, so a body is never built at run time.
type Script struct {
	src string
	sha string
}

// Src is the script's text.
func (s *Script) Src() string { return s.src }

// allScripts lists every script, for the lines to load.
var allScripts []*Script

func newScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	s := &Script{src: src, sha: hex.EncodeToString(sum[:])}
	allScripts = append(allScripts, s)
	return s
}

// nowLua is nowMs(), the server's clock (TIME) in milliseconds: the one
// clock of every script that compares an expiry it keeps itself.
const nowLua = `
local function nowMs()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// Each operation that reads before it writes is one script: it runs
// atomically on the server, so the compare and its write never straddle
// another client's write.
var (
	// KEYS: key; ARGV: token. 1 deleted, 0 held by another token, -1 absent.
	compareAndDeleteScript = newScript(`local v = redis.call("get",KEYS[1])
if v == ARGV[1] then return redis.call("del",KEYS[1]) end
if v then return 0 end
return -1`)
	// KEYS: key; ARGV: token, ttl-ms.
	compareAndExtendScript = newScript(
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`)
	// getScript reads the value and its pttl in one round trip, both from
	// the same instant. A key of another type (GET's error) is {pttl,
	// GET's error}: it exists, and its ttl is read all the same.
	getScript = newScript(
		`local v = redis.pcall("get",KEYS[1]) if not v then return false end if type(v) == "table" then return {redis.call("pttl",KEYS[1]), v.err} end return {v, redis.call("pttl",KEYS[1])}`)
	// KEYS: key; ARGV: token, ttl-ms. 1 extended, 2 stored, 0 held by
	// another token.
	extendOrSetNXScript = newScript(`local v = redis.call("get",KEYS[1])
if v == ARGV[1] then redis.call("pexpire",KEYS[1],ARGV[2]) return 1 end
if v then return 0 end
redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2])
return 2`)
)

// The release scripts publish inside the script, so a waiter on another
// proxy hears of the release without the releaser paying a round trip; and
// only when a waiter has marked the key (KEYS[2], see WaitKey), so that an
// uncontended release publishes nothing. setNXMarkedScript
// (redis_fair.go) is a waiter's SET NX: when the key is not stored it
// marks it, in the same atomic step, until ARGV[3] ms from now unless an
// earlier mark lasts longer.
var (
	// KEYS: key, wait key, fair queue, fair reservation; ARGV: token,
	// channel. Replies as compareAndDeleteScript. Where fair waiters are
	// queued, the key is reserved for them instead of deleted (see
	// redis_fair.go).
	compareAndDeleteNotifyScript = newScript(`local v = redis.call("get",KEYS[1])
if v == ARGV[1] then
  local ms = redis.call("pttl",KEYS[3])
  if ms > 0 then
    local r = "redlockd:queued:" .. ARGV[1]
    redis.call("set",KEYS[1],r,"px",ms)
    redis.call("set",KEYS[4],r,"px",ms)
  else
    redis.call("del",KEYS[1])
  end
  if redis.call("exists",KEYS[2]) == 1 then redis.call("publish",ARGV[2],KEYS[1]) end
  return 1
end
if v then return 0 end
return -1`)
	deleteNotifyScript = newScript(
		`local n = redis.call("del",KEYS[1]) if n > 0 and redis.call("exists",KEYS[2]) == 1 then redis.call("publish",ARGV[1],KEYS[1]) end return n`)
)

// The multi-key operations: one script each, so that the node applies it
// to all keys without another client's write in between.
var (
	setNXAllScript = newScript(`
for _, key in ipairs(KEYS) do
  if redis.call("exists", key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return 1`)
	extendAllScript = newScript(`
for _, key in ipairs(KEYS) do
  if redis.call("get", key) ~= ARGV[1] then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("pexpire", key, ARGV[2])
end
return 1`)
	// KEYS are the keys, then their wait keys (see WaitKey).
	releaseEachScript = newScript(`
local out = {}
local n = #KEYS / 2
for i = 1, n do
  local key = KEYS[i]
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    if redis.call("exists", KEYS[n + i]) == 1 then redis.call("publish", ARGV[2], key) end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`)
	// A key without an expiry (-1) is not extended: adding to "forever"
	// has no meaning, and redis-py's own script refuses it too.
	addTTLScript = newScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return -1 end
local pttl = redis.call("pttl", KEYS[1])
if pttl < 0 then return -1 end
local ttl = pttl + tonumber(ARGV[2])
if ttl > tonumber(ARGV[3]) then ttl = tonumber(ARGV[3]) end
redis.call("pexpire", KEYS[1], ttl)
return ttl`)
)

// The reentrant-lock and fencing scripts. A hold count is stored as
// "<token> <count>" at the holds key (see quorum.FormatHolds); one that is
// absent or names another token counts as one hold.
//
// holdsLua reads and writes a hold count in scripts: holdsOf(key, token)
// is token's count at key (none, or one of another token, is 1; the count
// is after the last space, as quorum.ParseHolds reads it), and
// setHolds(key, token, n, lockKey) stores it with lockKey's ttl.
const holdsLua = `
local function holdsOf(k, token)
  local h = redis.call("get", k)
  if h then
    local t, c = string.match(h, "^(.*) (%d+)$")
    if t == token then return tonumber(c) end
  end
  return 1
end
local function setHolds(k, token, n, lockKey)
  local ttl = redis.call("pttl", lockKey)
  if ttl > 0 then
    redis.call("set", k, token .. " " .. n, "px", ttl)
  else
    redis.call("set", k, token .. " " .. n)
  end
end
`

// The mark of a round (HoldOwner) is the token its hold went to, "-" once
// undone, or "?<token>" when undone before it arrived while token was
// granted: it may then add a hold to token only.
var (
	// KEYS: lock, holds, mark; ARGV: prefix, token, ttl-ms.
	holdOwnerScript = newScript(holdsLua + `
local m = redis.call("get", KEYS[3])
local v = redis.call("get", KEYS[1])
if m == "-" then return false end
if m and string.sub(m, 1, 1) ~= "?" then
  if v ~= m then return false end
  return {v, holdsOf(KEYS[2], v)}
end
if m and v ~= string.sub(m, 2) then return false end
local n = 1
if not v then
  v = ARGV[2]
  redis.call("set", KEYS[1], v, "px", ARGV[3])
elseif string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  n = holdsOf(KEYS[2], v) + 1
  local ttl = redis.call("pttl", KEYS[1])
  if ttl >= 0 and ttl < tonumber(ARGV[3]) then redis.call("pexpire", KEYS[1], ARGV[3]) end
else
  return false
end
setHolds(KEYS[2], v, n, KEYS[1])
redis.call("set", KEYS[3], v, "px", ARGV[3])
return {v, n}`)
	// KEYS: lock, holds, mark, wait; ARGV: keep, ttl-ms, release channel.
	undoHoldScript = newScript(holdsLua + `
local m = redis.call("get", KEYS[3])
if m == "-" or m == ARGV[1] or (m and string.sub(m, 1, 1) == "?") then return 0 end
if not m then
  local mk = "-"
  if ARGV[1] ~= "" then mk = "?" .. ARGV[1] end
  redis.call("set", KEYS[3], mk, "px", ARGV[2])
  return 0
end
redis.call("set", KEYS[3], "-", "px", ARGV[2])
if redis.call("get", KEYS[1]) ~= m then return 0 end
local n = holdsOf(KEYS[2], m) - 1
if n <= 0 then
  redis.call("del", KEYS[1], KEYS[2])
  if redis.call("exists", KEYS[4]) == 1 then redis.call("publish", ARGV[3], KEYS[1]) end
  return 1
end
setHolds(KEYS[2], m, n, KEYS[1])
return 1`)
	// KEYS: lock, holds, wait; ARGV: token, release channel.
	unholdScript = newScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return -1 end
local n = 1
local h = redis.call("get", KEYS[2])
if h then
  local t, c = string.match(h, "^(.*) (%d+)$")
  if t == ARGV[1] then n = tonumber(c) end
end
n = n - 1
if n <= 0 then
  redis.call("del", KEYS[1], KEYS[2])
  if redis.call("exists", KEYS[3]) == 1 then redis.call("publish", ARGV[2], KEYS[1]) end
  return 0
end
local ttl = redis.call("pttl", KEYS[1])
if ttl > 0 then redis.call("set", KEYS[2], ARGV[1] .. " " .. n, "px", ttl) end
return n`)
	// Extending never shortens: another hold of the owner may have been
	// granted a longer validity.
	extendHeldScript = newScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
local px = tonumber(ARGV[2])
for _, k in ipairs(KEYS) do
  if redis.call("pttl", k) < px then redis.call("pexpire", k, px) end
end
return 1`)
	// restoreHeldScript stores an owner lock and its hold count (ARGV[2],
	// as quorum.FormatHolds writes it) where the lock key is absent, both
	// with the same ttl, in one step.
	restoreHeldScript = newScript(`
if redis.call("exists", KEYS[1]) == 1 then return 0 end
redis.call("set", KEYS[1], ARGV[1], "px", ARGV[3])
redis.call("set", KEYS[2], ARGV[2], "px", ARGV[3])
return 1`)
	// The counter is compared as a number: exact up to 2^53. One that is
	// not decimal digits within that (parseFence's rule, checked on the
	// text: tonumber rounds above 2^53) is overwritten: ReadFence refuses
	// it, so no fence was taken from it.
	raiseFenceScript = newScript(`
local s = redis.call("get", KEYS[1])
local cur = 0
if s and string.match(s, "^%d+$") and (#s < 16 or (#s == 16 and s <= "9007199254740992")) then
  cur = tonumber(s)
end
local v = tonumber(ARGV[1])
if v > cur then
  redis.call("set", KEYS[1], ARGV[1], "px", ARGV[2])
  return v
end
redis.call("pexpire", KEYS[1], ARGV[2])
return cur`)
)
