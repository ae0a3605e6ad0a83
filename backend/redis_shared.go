package backend

import "github.com/redlockd/redlockd/quorum"

// The read-write lock's scripts (see quorum/shared.go). The readers of a
// key are a sorted set at quorum.SharedKey: member the reader's token,
// score its expiry in ms of the server's clock (TIME), so that each
// reader expires on its own. The key stores quorum.SharedMarker with the
// latest expiry of the set (PXAT), and the set expires with it. Every
// script drops the readers whose expiry has passed before it counts them.
//
// sharedLua: nowMs() is the server's clock in ms; prune(set) drops the
// expired readers; top(set) is the latest expiry left, or nil.
const sharedLua = nowLua + `
local function prune(set, at)
  redis.call("zremrangebyscore", set, "-inf", at)
end
local function top(set)
  return redis.call("zrange", set, -1, -1, "withscores")[2]
end
`

var (
	// KEYS: lock, readers, writer mark, wait; ARGV: token, ttl-ms, marker,
	// wait-mark-ms (0: none). 1 added, 0 refused.
	acquireSharedScript = newScript(sharedLua + `
local function refuse()
  local m = tonumber(ARGV[4])
  if m > 0 and redis.call("pttl", KEYS[4]) < m then redis.call("set", KEYS[4], "1", "px", m) end
  return 0
end
local at = nowMs()
local v = redis.call("get", KEYS[1])
if v then
  if v ~= ARGV[3] then return refuse() end
  prune(KEYS[2], at)
  if redis.call("zcard", KEYS[2]) == 0 then return refuse() end
else
  redis.call("del", KEYS[2])
end
if redis.call("exists", KEYS[3]) == 1 then return refuse() end
redis.call("zadd", KEYS[2], at + tonumber(ARGV[2]), ARGV[1])
local t = top(KEYS[2])
redis.call("set", KEYS[1], ARGV[3], "pxat", t)
redis.call("pexpireat", KEYS[2], t)
return 1`)
	// KEYS: lock, readers; ARGV: token, ttl-ms, marker. 1 done, 0 not held.
	extendSharedScript = newScript(sharedLua + `
local v = redis.call("get", KEYS[1])
if v == ARGV[1] and v ~= ARGV[3] then return redis.call("pexpire", KEYS[1], ARGV[2]) end
if v ~= ARGV[3] then return 0 end
local at = nowMs()
prune(KEYS[2], at)
if not redis.call("zscore", KEYS[2], ARGV[1]) then return 0 end
redis.call("zadd", KEYS[2], at + tonumber(ARGV[2]), ARGV[1])
local t = top(KEYS[2])
redis.call("pexpireat", KEYS[1], t)
redis.call("pexpireat", KEYS[2], t)
return 1`)
	// KEYS: lock, readers, wait; ARGV: token, release channel, marker. 1
	// removed, 0 held otherwise, -1 absent. The last reader's removal
	// deletes the lock and is announced where a waiter marked it.
	releaseSharedScript = newScript(sharedLua + `
local function free()
  redis.call("del", KEYS[1], KEYS[2])
  if redis.call("exists", KEYS[3]) == 1 then redis.call("publish", ARGV[2], KEYS[1]) end
  return 1
end
local v = redis.call("get", KEYS[1])
if not v then return -1 end
if v == ARGV[1] and v ~= ARGV[3] then return free() end
if v ~= ARGV[3] then return 0 end
prune(KEYS[2], nowMs())
if redis.call("zrem", KEYS[2], ARGV[1]) == 0 then return 0 end
local t = top(KEYS[2])
if not t then return free() end
redis.call("pexpireat", KEYS[1], t)
redis.call("pexpireat", KEYS[2], t)
return 1`)
	// KEYS: lock, readers; ARGV: marker. The live readers, -1 when the
	// lock is not held by readers. It only reads.
	readSharedScript = newScript(sharedLua + `
if redis.call("get", KEYS[1]) ~= ARGV[1] then return -1 end
return redis.call("zcount", KEYS[2], "(" .. nowMs(), "+inf")`)
)

// buildShared builds the read-write lock's commands.
func (c *call) buildShared(cmd quorum.Cmd, channel string) {
	k, rk := cmd.Key, quorum.SharedKey(cmd.Key)
	switch cmd.Kind {
	case quorum.AcquireShared:
		c.script(acquireSharedScript, readYes, []string{k, rk, quorum.WriterKey(k), WaitKey(k)},
			cmd.Token, c.ms(cmd.TTL), quorum.SharedMarker, msOrZero(cmd.Add))
	case quorum.ExtendShared:
		c.script(extendSharedScript, readYes, []string{k, rk}, cmd.Token, c.ms(cmd.TTL), quorum.SharedMarker)
	case quorum.ReleaseShared:
		c.script(releaseSharedScript, readYes, []string{k, rk, WaitKey(k)}, cmd.Token, channel, quorum.SharedMarker)
	case quorum.ReadShared:
		c.script(readSharedScript, readUnhold, []string{k, rk}, quorum.SharedMarker)
	}
}
