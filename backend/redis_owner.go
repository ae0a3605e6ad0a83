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
// A hold count is stored as "<token> <count>" at the holds key; one that
// is absent or names another token counts as one hold.
var (
	reenterScript = redis.NewScript(`
local v = redis.call("get", KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return false end
local n = 1
local h = redis.call("get", KEYS[2])
if h then
  local t, c = string.match(h, "^(.*) (%d+)$")
  if t == v then n = tonumber(c) end
end
n = n + 1
redis.call("pexpire", KEYS[1], ARGV[2])
redis.call("set", KEYS[2], v .. " " .. n, "px", ARGV[2])
return {v, n}`)
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
	extendHeldScript = redis.NewScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
redis.call("pexpire", KEYS[1], ARGV[2])
redis.call("pexpire", KEYS[2], ARGV[2])
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

// Reenter implements quorum.Reentrant.
func (r *Redis) Reenter(ctx context.Context, key, holdsKey, prefix string, ttl time.Duration) (string, int64, bool, error) {
	px, err := millis(ttl)
	if err != nil {
		return "", 0, false, err
	}
	res, err := reenterScript.Run(ctx, r.client, []string{key, holdsKey}, prefix, px).Slice()
	if errors.Is(err, redis.Nil) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, wrap(ctx, "reenter", err)
	}
	if len(res) == 2 {
		tok, okT := res[0].(string)
		n, okN := res[1].(int64)
		if okT && okN {
			return tok, n, true, nil
		}
	}
	return "", 0, false, fmt.Errorf("backend: reenter: unexpected script reply %v", res)
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
	px, err := millis(ttl)
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
	px, err := millis(ttl)
	if err != nil {
		return 0, err
	}
	n, err := raiseFenceScript.Run(ctx, r.client, []string{key}, v, px).Int64()
	if err != nil {
		return 0, wrap(ctx, "raise fence", err)
	}
	return n, nil
}
