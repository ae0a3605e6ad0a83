package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockd/redlockd/quorum"
)

// The Redis node provides the quorum's optional operations.
var (
	_ quorum.MultiNode = (*Redis)(nil)
	_ quorum.TTLAdder  = (*Redis)(nil)
)

// One script per operation, so that each node applies it to all keys
// without another client's write in between.
var (
	setNXAllScript = redis.NewScript(`
for _, key in ipairs(KEYS) do
  if redis.call("exists", key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return 1`)
	extendAllScript = redis.NewScript(`
for _, key in ipairs(KEYS) do
  if redis.call("get", key) ~= ARGV[1] then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("pexpire", key, ARGV[2])
end
return 1`)
	// KEYS are the keys, then their wait keys (see waitKey).
	releaseEachScript = redis.NewScript(`
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
	addTTLScript = redis.NewScript(`
if redis.call("get", KEYS[1]) ~= ARGV[1] then return -1 end
local pttl = redis.call("pttl", KEYS[1])
if pttl < 0 then return -1 end
local ttl = pttl + tonumber(ARGV[2])
if ttl > tonumber(ARGV[3]) then ttl = tonumber(ARGV[3]) end
redis.call("pexpire", KEYS[1], ttl)
return ttl`)
)

// SetNXAll implements quorum.MultiNode.
func (r *Redis) SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	ms, err := ceilMillis(ttl)
	if err != nil {
		return false, err
	}
	n, err := setNXAllScript.Run(ctx, r.client, keys, token, ms).Int64()
	if err != nil {
		return false, wrap(ctx, "multi-key SET NX", err)
	}
	return n == 1, nil
}

// ExtendAll implements quorum.MultiNode.
func (r *Redis) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	ms, err := ceilMillis(ttl)
	if err != nil {
		return false, err
	}
	n, err := extendAllScript.Run(ctx, r.client, keys, token, ms).Int64()
	if err != nil {
		return false, wrap(ctx, "multi-key extend", err)
	}
	return n == 1, nil
}

// ReleaseEach implements quorum.MultiNode.
func (r *Redis) ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error) {
	res, err := releaseEachScript.Run(ctx, r.client, waitKeys(keys), token, r.watch.channel).Int64Slice()
	if err != nil {
		return nil, wrap(ctx, "multi-key release", err)
	}
	if len(res) != len(keys) {
		return nil, fmt.Errorf("backend: multi-key release: %d answers for %d keys", len(res), len(keys))
	}
	out := make([]bool, len(res))
	for i, v := range res {
		out[i] = v == 1
	}
	return out, nil
}

// CompareAndAddTTL implements quorum.TTLAdder.
func (r *Redis) CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error) {
	addMS, err := ceilMillis(add)
	if err != nil {
		return 0, false, err
	}
	limitMS, err := ceilMillis(limit)
	if err != nil {
		return 0, false, err
	}
	n, err := addTTLScript.Run(ctx, r.client, []string{key}, token, addMS, limitMS).Int64()
	if err != nil {
		return 0, false, wrap(ctx, "compare-and-add-ttl", err)
	}
	if n < 0 {
		return 0, false, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}
