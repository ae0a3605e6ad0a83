package backend

import (
	"strconv"
	"strings"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
)

// A key's fair queue lives on a Redis node in two sorted sets that share
// the key's hash tag: the queue (FairQueueKey), tokens scored by
// ticket, so that the first entry is the smallest ticket (ties go by
// token, as Redis orders members of equal score); and the entries'
// expiries (fairExpiryKey), the same tokens scored by the server time
// in ms at which each one stops being queued. Every script that changes
// them first drops the entries whose expiry passed, and afterwards makes
// both sets expire with their last entry, so that the queue key exists
// exactly while an entry is live.
//
// While entries are queued, a free key is reserved for them: it holds a
// value "redlockd:queued:<tag>" (the tag is a ticket, or the token just
// released or gone) that its reservation key (fairResKey) holds too, for
// as long as the queue lasts. A reserved key is present,
// so a plain SET NX (the hot path, unchanged) and every other acquire
// refuse it; only the queue's first entry takes it (FairAcquire). The
// value is recognised only beside its reservation key, which the node
// writes and deletes with it: a client's lock whose value merely looks
// alike is never taken for a reservation. Releases that run the
// announcing compare-and-delete (UNLOCK, the compare-and-delete scripts)
// leave the reservation in place of the lock; every round of a waiter
// that is not first puts it back on a free key.

// FairQueueKey is where a node keeps the queue of key's fair waiters.
func FairQueueKey(key string) string { return slot.Key(fairQueuePrefix, key) }

// fairExpiryKey is where a node keeps the expiries of key's queue entries.
func fairExpiryKey(key string) string { return slot.Key("redlockd:fairttl:", key) }

// fairResKey is where a node keeps the value of key's reservation.
func fairResKey(key string) string { return slot.Key(fairResPrefix, key) }

const (
	// waitPrefix is WaitKey's name without the key's hash tag.
	waitPrefix      = "redlockd:wait:"
	fairQueuePrefix = "redlockd:fair:"
	fairResPrefix   = "redlockd:fairres:"
)

// fairReleasePrefixes name the keys (after the lock key) of the
// announcing compare-and-delete: wait mark, queue, reservation.
var fairReleasePrefixes = []string{waitPrefix, fairQueuePrefix, fairResPrefix}

// fairLua is the part the fair scripts share, over q (queue), e
// (expiries), k (lock key) and res (reservation). Numbers are passed to
// Redis as integer text: Lua's own conversion keeps 14 digits only.
const fairLua = nowLua + `
local function fairPurge(q, e, now)
  local dead = redis.call("zrangebyscore", e, "-inf", now)
  for _, m in ipairs(dead) do redis.call("zrem", q, m) end
  if #dead > 0 then redis.call("zremrangebyscore", e, "-inf", now) end
end
local function fairExpire(q, e, now)
  local last = redis.call("zrange", e, -1, -1, "withscores")
  if last[2] then
    local ms = tonumber(last[2]) - now
    if ms < 1 then ms = 1 end
    redis.call("pexpire", q, string.format("%d", ms))
    redis.call("pexpire", e, string.format("%d", ms))
  end
end
local function fairQueue(q, e, token, ticket, entryMs, now)
  redis.call("zadd", q, "NX", ticket, token)
  redis.call("zadd", e, string.format("%d", now + tonumber(entryMs)), token)
  fairExpire(q, e, now)
end
local function fairTake(q, e, token, now)
  local n = redis.call("zrem", q, token)
  redis.call("zrem", e, token)
  fairExpire(q, e, now)
  return n
end
local function fairReserved(k, res)
  local v = redis.call("get", k)
  return v and v == redis.call("get", res)
end
local function fairFree(k, res)
  return redis.call("exists", k) == 0 or fairReserved(k, res)
end
local function fairReserve(k, res, q, tag)
  local ms = redis.call("pttl", q)
  if ms > 0 then
    local v = "redlockd:queued:" .. tag
    redis.call("set", k, v, "px", ms)
    redis.call("set", res, v, "px", ms)
  elseif fairReserved(k, res) then
    redis.call("del", k, res)
  end
end
`

var (
	// A waiter's SET NX: when the key is not stored it marks it, in the
	// same atomic step, until ARGV[3] ms from now unless an earlier mark
	// lasts longer; the waiter is a writer, so the writer's mark (which
	// keeps new readers out) is set alike, and cleared once it holds the
	// key. KEYS: key, wait key, queue, writer's mark; ARGV: token,
	// ttl-ms, mark-ms. 1 stored, 0 held, 2 fair waiters queued.
	setNXMarkedScript = newScript(`local queued = redis.call("exists",KEYS[3]) == 1
if not queued and redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then redis.call("del",KEYS[4]) return 1 end
for _, i in ipairs({2, 4}) do
  if redis.call("pttl",KEYS[i]) < tonumber(ARGV[3]) then redis.call("set",KEYS[i],"1","PX",ARGV[3]) end
end
if queued then return 2 end
return 0`)
	// KEYS: queue, expiries. The largest ticket queued, 0 when none.
	fairTailScript = newScript(fairLua + `
fairPurge(KEYS[1], KEYS[2], nowMs())
local last = redis.call("zrange", KEYS[1], -1, -1, "withscores")
if last[2] then return tonumber(last[2]) end
return 0`)
	// KEYS: key, queue, expiries, wait key, reservation; ARGV: token,
	// ticket, ttl-ms, entry-ms. 1 stored. Ticket 0 is a try, which
	// queues nothing and stores only where nobody is queued.
	fairAcquireScript = newScript(fairLua + `
local k, q, e, w, res = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if ARGV[2] == "0" then
  if redis.call("exists", q) == 0 and redis.call("set", k, ARGV[1], "nx", "px", ARGV[3]) then return 1 end
  return 0
end
local now = nowMs()
fairPurge(q, e, now)
fairQueue(q, e, ARGV[1], ARGV[2], ARGV[4], now)
local free = fairFree(k, res)
if free and redis.call("zrange", q, 0, 0)[1] == ARGV[1] then
  redis.call("set", k, ARGV[1], "px", ARGV[3])
  redis.call("del", res)
  fairTake(q, e, ARGV[1], now)
  return 1
end
if free then fairReserve(k, res, q, ARGV[2]) end
if redis.call("pttl", w) < tonumber(ARGV[4]) then redis.call("set", w, "1", "px", ARGV[4]) end
return 0`)
	// KEYS: key, queue, expiries, reservation; ARGV: token, ticket,
	// entry-ms. 1 deleted (and the key reserved for the queue again).
	fairUndoScript = newScript(fairLua + `
local k, q, e, res = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call("get", k) ~= ARGV[1] then return 0 end
redis.call("del", k)
local now = nowMs()
fairPurge(q, e, now)
fairQueue(q, e, ARGV[1], ARGV[2], ARGV[3], now)
fairReserve(k, res, q, ARGV[2])
return 1`)
	// KEYS: key, queue, expiries, reservation; ARGV: token, release
	// channel. 1 was queued.
	fairLeaveScript = newScript(fairLua + `
local k, q, e, res = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = nowMs()
fairPurge(q, e, now)
local n = fairTake(q, e, ARGV[1], now)
-- Whether or not the entry was still there (it expires as its wait runs
-- out, when the leave is sent), a free key is the next entry's to take.
if fairFree(k, res) then
  fairReserve(k, res, q, ARGV[1])
  if redis.call("exists", q) == 1 then redis.call("publish", ARGV[2], k) end
end
return n`)
)

// buildSetNXMarked builds a waiter's SetNX (Add > 0): refused, and
// reported, where fair waiters are queued for the key.
func (c *call) buildSetNXMarked(cmd quorum.Cmd) {
	c.scriptTagged(setNXMarkedScript, readSetNXMarked, cmd.Key, []string{waitPrefix, fairQueuePrefix, quorum.WriterPrefix}, cmd.Token, c.ms(cmd.TTL), c.ms(cmd.Add))
}

// scriptTagged is script over the keys key and, for each prefix,
// prefix+slot.Tagged(key), written into the request as they are encoded, so
// that no key name is built on the way.
func (c *call) scriptTagged(s *Script, read readFn, key string, prefixes []string, args ...string) {
	c.s, c.read = s, read
	b := appendScriptHead(c.room(), s, false, 1+len(prefixes), len(args))
	b = appendBulk(b, key)
	braced := "" // slot.Tagged(key) for a key with braces of its own (rare)
	if strings.ContainsAny(key, "{}") {
		braced = slot.Tagged(key)
	}
	for _, p := range prefixes {
		if braced != "" {
			b = appendBulk(b, p+braced)
			continue
		}
		b = strconv.AppendInt(append(b, '$'), int64(len(p)+len(key)+2), 10)
		b = append(append(append(append(append(b, '\r', '\n'), p...), '{'), key...), '}', '\r', '\n')
	}
	for _, a := range args {
		b = appendBulk(b, a)
	}
	c.req.Buf = b
}

// appendBulk appends s as a RESP bulk string.
func appendBulk[T ~string | ~[]byte](b []byte, s T) []byte {
	b = strconv.AppendInt(append(b, '$'), int64(len(s)), 10)
	return append(append(append(b, '\r', '\n'), s...), '\r', '\n')
}

// appendScriptHead begins an EVALSHA (or, with eval, EVAL) of s over
// nkeys keys and nargs arguments: the array's header, the command, the
// SHA1 (or the script) and nkeys; the caller appends the keys and
// arguments.
func appendScriptHead(b []byte, s *Script, eval bool, nkeys, nargs int) []byte {
	b = strconv.AppendInt(append(b, '*'), int64(3+nkeys+nargs), 10)
	b = append(b, '\r', '\n')
	if eval {
		b = appendBulk(appendBulk(b, "eval"), s.src)
	} else {
		b = appendBulk(appendBulk(b, "evalsha"), s.sha)
	}
	var digits [20]byte
	return appendBulk(b, strconv.AppendInt(digits[:0], int64(nkeys), 10))
}

// buildFair builds the fair queue's commands.
func (c *call) buildFair(cmd quorum.Cmd, channel string) {
	k, q, e, res := cmd.Key, FairQueueKey(cmd.Key), fairExpiryKey(cmd.Key), fairResKey(cmd.Key)
	ticket := strconv.FormatInt(cmd.N, 10)
	switch cmd.Kind {
	case quorum.FairTail:
		c.script(fairTailScript, readN, []string{q, e})
	case quorum.FairAcquire:
		c.script(fairAcquireScript, readYes, []string{k, q, e, WaitKey(k), res}, cmd.Token, ticket, c.ms(cmd.TTL), c.ms(max(cmd.Add, 1)))
	case quorum.FairUndo:
		c.script(fairUndoScript, readYes, []string{k, q, e, res}, cmd.Token, ticket, c.ms(max(cmd.Add, 1)))
	case quorum.FairLeave:
		c.script(fairLeaveScript, readYes, []string{k, q, e, res}, cmd.Token, channel)
	}
}

// readSetNXMarked: 1 stored; otherwise N says why not (quorum.FairQueued:
// fair waiters are queued).
func readSetNXMarked(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	return quorum.Reply{OK: n == 1, N: n}, err
}
