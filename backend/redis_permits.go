package backend

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// The semaphore scripts (quorum.ReadPermits and friends). The slot keys
// are built in the script from their prefix (PermitSlotPrefix): naming up
// to quorum.MaxPermits keys in KEYS would cost more than reading them, and
// the prefix carries the key's hash tag, so every slot is in the key's
// Redis Cluster slot. The marker's ttl follows the longest slot of the
// node, so that a key holding no slot is soon free for an exclusive lock.
var (
	// KEYS: key, wait key; ARGV: slot prefix, n, mark-ms. {value, slots}.
	readPermitsScript = newScript(`
local v = redis.call("get", KEYS[1])
local mark = tonumber(ARGV[3])
if v and mark > 0 and redis.call("pttl", KEYS[2]) < mark then redis.call("set", KEYS[2], "1", "px", mark) end
local slots = {}
for i = 0, tonumber(ARGV[2]) - 1 do slots[i + 1] = redis.call("get", ARGV[1] .. i) end
return {v, slots}`)
	// KEYS: key, slot, wait key; ARGV: token, marker, ttl-ms, mark-ms,
	// marker prefix. 1 stored, 0 refused, -m the key holds the marker of
	// m permits.
	acquirePermitScript = newScript(`
local v = redis.call("get", KEYS[1])
local ttl = tonumber(ARGV[3])
if (not v or v == ARGV[2]) and redis.call("exists", KEYS[2]) == 0 then
  redis.call("set", KEYS[2], ARGV[1], "px", ttl)
  if redis.call("pttl", KEYS[1]) < ttl then redis.call("set", KEYS[1], ARGV[2], "px", ttl) end
  return 1
end
local mark = tonumber(ARGV[4])
if mark > 0 and redis.call("pttl", KEYS[3]) < mark then redis.call("set", KEYS[3], "1", "px", mark) end
if v and v ~= ARGV[2] and string.sub(v, 1, #ARGV[5]) == ARGV[5] then
  local m = tonumber(string.sub(v, #ARGV[5] + 1))
  if m and m > 0 then return -m end
end
return 0`)
	// KEYS: key, slot; ARGV: token, ttl-ms, marker. A key that holds the
	// token itself is a plain lock whose token only looks like a permit's.
	extendPermitScript = newScript(`
local ttl = tonumber(ARGV[2])
if redis.call("get", KEYS[2]) == ARGV[1] then
  redis.call("pexpire", KEYS[2], ttl)
  local v = redis.call("get", KEYS[1])
  if not v or (v == ARGV[3] and redis.call("pttl", KEYS[1]) < ttl) then redis.call("set", KEYS[1], ARGV[3], "px", ttl) end
  return 1
end
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ttl) end
return 0`)
	// KEYS: key, slot, wait key; ARGV: token, marker, slot prefix, n,
	// release channel, notify (1 or 0). Replies as compareAndDeleteScript.
	releasePermitScript = newScript(`
local function released()
  if ARGV[6] == "1" and redis.call("exists", KEYS[3]) == 1 then redis.call("publish", ARGV[5], KEYS[1]) end
  return 1
end
local s = redis.call("get", KEYS[2])
local v = redis.call("get", KEYS[1])
if s ~= ARGV[1] then
  if v == ARGV[1] then redis.call("del", KEYS[1]) return released() end
  if s or v then return 0 end
  return -1
end
redis.call("del", KEYS[2])
if v == ARGV[2] then
  local top = -2
  for i = 0, tonumber(ARGV[4]) - 1 do
    local t = redis.call("pttl", ARGV[3] .. i)
    if t > top then top = t end
  end
  if top == -2 then redis.call("del", KEYS[1]) elseif top > 0 then redis.call("pexpire", KEYS[1], top) end
end
return released()`)
)

var errBadPermit = errors.New("not a permit's token, or n out of range")

// buildPermits builds the semaphore commands.
func (c *call) buildPermits(cmd quorum.Cmd, channel string) {
	k := cmd.Key
	if cmd.Kind == quorum.ReadPermits {
		if cmd.N < 1 || cmd.N > quorum.MaxPermits {
			c.err = errBadPermit
			return
		}
		c.nkeys = int32(cmd.N)
		c.script(readPermitsScript, readPermits, []string{k, WaitKey(k)}, quorum.PermitSlotPrefix(k), strconv.FormatInt(cmd.N, 10), msOrZero(cmd.Add))
		return
	}
	n, slot, ok := quorum.ParsePermitToken(cmd.Token)
	if !ok {
		c.err = errBadPermit
		return
	}
	sk, marker := quorum.PermitSlotKey(k, slot), quorum.PermitsMarker(n)
	switch cmd.Kind {
	case quorum.AcquirePermit:
		c.script(acquirePermitScript, readPermitGrant, []string{k, sk, WaitKey(k)}, cmd.Token, marker, c.ms(cmd.TTL), msOrZero(cmd.Add), quorum.PermitsMarkerPrefix)
	case quorum.ExtendPermit:
		c.script(extendPermitScript, readYes, []string{k, sk}, cmd.Token, c.ms(cmd.TTL), marker)
	case quorum.ReleasePermit:
		notify := "0"
		if cmd.Notify {
			notify = "1"
		}
		c.script(releasePermitScript, readYes, []string{k, sk, WaitKey(k)}, cmd.Token, marker, quorum.PermitSlotPrefix(k), strconv.Itoa(n), channel, notify)
	}
}

// readPermitGrant: 1 stored; -m the key holds the marker of m permits.
func readPermitGrant(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if n < 0 {
		return quorum.Reply{N: -n}, err
	}
	return quorum.Reply{OK: n > 0}, err
}

// readPermits reads {value, slots}: the key's value (nil when absent) and
// one token or nil per slot.
func readPermits(c *call, rep wire.Reply) (quorum.Reply, error) {
	if rep.Kind != '*' || len(rep.Elems) != 2 || rep.Elems[1].Kind != '*' || len(rep.Elems[1].Elems) != int(c.nkeys) {
		return quorum.Reply{}, fmt.Errorf("unexpected script reply %+v", rep)
	}
	out := quorum.Reply{OK: true, Value: &quorum.Value{Kind: quorum.ArrayValue, Elems: make([]quorum.Value, c.nkeys)}}
	out.Token, _ = rep.Elems[0].Bulk()
	for i, e := range rep.Elems[1].Elems {
		if s, ok := e.Bulk(); ok {
			out.Value.Elems[i] = quorum.Value{Kind: quorum.BulkValue, Str: s}
		}
	}
	return out, nil
}
