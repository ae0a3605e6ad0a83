package commands

import (
	"context"
	"testing"
)

// Multi-key lock scripts in the shape of bsm/redislock's unreleased
// ObtainMulti: MSETNX of key, value pairs, MSET again for a holder whose
// token prefixes every key, then a PEXPIRE of each key; release and ttl
// read every key with MGET first.
const (
	multiObtain = `
local function expireAll(ms)
  for _, k in ipairs(KEYS) do redis.call('pexpire', k, ms) end
end
local function ownsAll()
  local n = tonumber(ARGV[2])
  for _, k in ipairs(KEYS) do
    if redis.call('getrange', k, 0, n - 1) ~= string.sub(ARGV[1], 1, n) then return false end
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
	multiRelease = `
local vals = redis.call('mget', unpack(KEYS))
for i, _ in ipairs(KEYS) do
  if vals[i] ~= ARGV[1] then return false end
end
redis.call('del', unpack(KEYS))
return redis.status_reply('OK')`
	multiPTTL = `
local vals = redis.call('mget', unpack(KEYS))
for i, _ in ipairs(KEYS) do
  if vals[i] ~= ARGV[1] then return false end
end
local least = 0
for _, k in ipairs(KEYS) do
  local t = redis.call('pttl', k)
  if t > 0 and (least == 0 or t < least) then least = t end
end
return least`
)

// TestReplicatedMultiKeyLock runs the multi-key scripts through two
// proxies over three real backends: one takes three keys (each with the
// token and an expiry on every backend), the other is refused while one
// of them is held and changes nothing, the holder takes them again with
// its token, reads their ttl, and releases them all.
func TestReplicatedMultiKeyLock(t *testing.T) {
	servers, _, a := scriptStack(t, nil)
	b := client(t, redisHandler(t, servers, Options{}))
	keys := []string{"m:1", "m:2", "m:3"}
	if got := a.do(eval(multiObtain, keys, "tokA:meta", "4", "30000")...); got != "+OK" {
		t.Fatalf("obtain = %s", got)
	}
	for _, k := range keys {
		if vals := valuesOf(servers, k); !allAre(vals, "tokA:meta") {
			t.Fatalf("%s on the backends: %q", k, vals)
		}
		for i, s := range servers {
			if ttl, err := s.Client().PTTL(context.Background(), k).Result(); err != nil || ttl <= 0 {
				t.Fatalf("%s on backend %d: pttl %v, %v; want an expiry", k, i, ttl, err)
			}
		}
	}
	other := []string{"m:0", "m:3"}
	if got := b.do(eval(multiObtain, other, "tokB", "4", "30000")...); got != "nil" {
		t.Fatalf("the other proxy's obtain over a held key = %s, want nil", got)
	}
	if vals := valuesOf(servers, "m:0"); !allAre(vals, "") {
		t.Fatalf("a refused obtain left m:0 = %q", vals)
	}
	if got := b.do(eval(multiRelease, keys, "tokB")...); got != "nil" {
		t.Fatalf("release with another token = %s, want nil", got)
	}
	if got := b.do(eval(multiObtain, keys, "tokA:meta", "4", "60000")...); got != "+OK" {
		t.Fatalf("re-obtain with the holder's token = %s", got)
	}
	if got := a.do(eval(multiPTTL, keys, "tokA:meta")...); len(got) < 2 || got[0] != ':' || got == ":0" {
		t.Fatalf("pttl = %s, want a positive integer", got)
	}
	if got := a.do(eval(multiRelease, keys, "tokA:meta")...); got != "+OK" {
		t.Fatalf("release = %s", got)
	}
	for _, k := range keys {
		if vals := valuesOf(servers, k); !allAre(vals, "") {
			t.Fatalf("%s after release: %q", k, vals)
		}
	}
	if got := b.do(eval(multiObtain, other, "tokB", "4", "30000")...); got != "+OK" {
		t.Fatalf("the other proxy's obtain after release = %s", got)
	}
}
