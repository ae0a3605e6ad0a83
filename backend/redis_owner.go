package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The reentrant-lock and fencing extensions of the Redis node
// (quorum.Reentrant, quorum.Fencer). Each is one script, so the lock key,
// its hold count and a fence counter change atomically on the server. They
// run over the go-redis client: they are not on the plain lock's hot path.
//
// A hold count is stored as "<token> <count>" at the holds key (see
// quorum.FormatHolds); one that is absent or names another token counts as
// one hold.
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

// The mark of a round (quorum.Reentrant) is the token its hold went to,
// "-" once undone, or "?<token>" when undone before it arrived while token
// was granted: it may then add a hold to token only.
var (
	// KEYS: lock, holds, mark; ARGV: prefix, token, ttl-ms.
	holdOwnerScript = redis.NewScript(holdsLua + `
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
	undoHoldScript = redis.NewScript(holdsLua + `
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
	unholdScript = redis.NewScript(`
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
	extendHeldScript = redis.NewScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
local px = tonumber(ARGV[2])
for _, k in ipairs(KEYS) do
  if redis.call("pttl", k) < px then redis.call("pexpire", k, px) end
end
return 1`)
	// The counter is compared as a number: exact up to 2^53. One that is
	// not decimal digits within that (parseFence's rule, checked on the
	// text: tonumber rounds above 2^53) is overwritten: ReadFence refuses
	// it, so no fence was taken from it.
	raiseFenceScript = redis.NewScript(`
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

// HoldOwner implements quorum.Reentrant.
func (r *Redis) HoldOwner(ctx context.Context, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (string, int64, bool, error) {
	px, err := ceilMillis(ttl)
	if err != nil {
		return "", 0, false, err
	}
	res, err := holdOwnerScript.Run(ctx, r.client, []string{key, holdsKey, markKey}, prefix, token, px).Slice()
	if errors.Is(err, redis.Nil) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, wrap(ctx, "hold", err)
	}
	if len(res) == 2 {
		tok, okT := res[0].(string)
		n, okN := res[1].(int64)
		if okT && okN {
			return tok, n, true, nil
		}
	}
	return "", 0, false, fmt.Errorf("backend: hold: unexpected script reply %v", res)
}

// UndoHold implements quorum.Reentrant.
func (r *Redis) UndoHold(ctx context.Context, key, holdsKey, markKey, keep string, ttl time.Duration) (bool, error) {
	px, err := ceilMillis(ttl)
	if err != nil {
		return false, err
	}
	// Dropping the last hold is a release: announced like any other.
	keys := []string{key, holdsKey, markKey, waitKey(key)}
	n, err := undoHoldScript.Run(ctx, r.client, keys, keep, px, r.watch.channel).Int64()
	if err != nil {
		return false, wrap(ctx, "undo hold", err)
	}
	return n == 1, nil
}

// Unhold implements quorum.Reentrant.
func (r *Redis) Unhold(ctx context.Context, key, holdsKey, token string) (int64, bool, error) {
	// The last hold's release is announced like any other (when a waiter
	// marked the key), so waiters on other proxies wake at once.
	n, err := unholdScript.Run(ctx, r.client, []string{key, holdsKey, waitKey(key)}, token, r.watch.channel).Int64()
	if err != nil {
		return 0, false, wrap(ctx, "unhold", err)
	}
	if n < 0 {
		return 0, false, nil
	}
	return n, true, nil
}

// ExtendHeld implements quorum.Reentrant.
func (r *Redis) ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error) {
	px, err := ceilMillis(ttl)
	if err != nil {
		return false, err
	}
	n, err := extendHeldScript.Run(ctx, r.client, []string{key, holdsKey}, token, px).Int64()
	if err != nil {
		return false, wrap(ctx, "extend-held", err)
	}
	return n == 1, nil
}

// ReadFence implements quorum.Fencer.
func (r *Redis) ReadFence(ctx context.Context, key string) (int64, error) {
	s, err := r.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap(ctx, "read fence", err)
	}
	return parseFence(s)
}

// RaiseFence implements quorum.Fencer.
func (r *Redis) RaiseFence(ctx context.Context, key string, v int64, ttl time.Duration) (int64, error) {
	px, err := ceilMillis(ttl)
	if err != nil {
		return 0, err
	}
	n, err := raiseFenceScript.Run(ctx, r.client, []string{key}, v, px).Int64()
	if err != nil {
		return 0, wrap(ctx, "raise fence", err)
	}
	return n, nil
}
