package backend

import (
	"errors"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/internal/resp"
	"github.com/redlockd/redlockd/quorum"
)

// A client's replicated script (quorum.Eval) runs as it is, by EVALSHA,
// loaded on demand (NOSCRIPT: the text is sent with EVAL). A script that
// may write runs with a mark: one MULTI … EXEC per node holds
//
//	EVALSHA snapshot (records each key's DUMP and PEXPIRETIME at the mark)
//	EVALSHA <the client's script, byte for byte>
//	EVALSHA after    (records how the script left each key, gives the
//	                  session ttl to a key left without an expiry)
//
// so that undoEvalScript can later put back a key that is still as the
// script left it. The mark is a hash: "n" once the snapshot ran, "b<i>"
// and "be<i>" the dump and absolute expiry (ms; -1 none) of KEYS[i] before
// (absent fields: the key was absent), "a<i>" and "ae<i>" after, "d" once
// the after step ran, and "x" alone once undone. KEYS[1] of the three
// scripts is the mark, KEYS[2…] the client's keys.
//
// The after step also says what the run changed (quorum.Reply.Effect): a
// digest of the state of every key whose dump or expiry differs from the
// snapshot, read as values (a string, a hash's fields sorted) so that
// servers of other versions or histories agree on equal contents, with
// "an expiry or none" rather than the expiry itself, which each server
// sets by its own clock. A run that changed nothing needs no record: the
// mark keeps only "d", for EvalMarkSlack, so that an undo of a run whose
// answer was lost, queued behind it, finds it done and leaves a short
// mark, not the long one for a script still on its way. Otherwise the
// mark lives until the last of the run's keys would expire by itself (a
// deleted key: as it would have), plus EvalMarkSlack, within the mark
// ttl; a round that stands drops it (ForgetEval). An expiry the run set
// beyond the max-ttl takes the run back in the same step.
//
// Absolute expiries come from PEXPIRETIME (Redis 7.0): exact to the
// millisecond, so "still as the script left it" is an equality, and
// RESTORE … ABSTTL puts back the very expiry a key had.

// EvalMarkSlack is how much longer than the run's keys a mark lives, for
// an undo still on its way.
const EvalMarkSlack = 2 * time.Second

// evalUndoLua is undo(m): put back, at mark m, every key still as the
// after step recorded it and changed by the script; a recorded expiry
// that has passed since means the key is gone. 1: something was put back.
// undone(m, ttl) leaves the "undone" mark for ttl ms, or for as long as
// the record had left where that is shorter.
const evalUndoLua = nowLua + `
local function undo(m)
  local now = nowMs()
  local done = 0
  for i = 2, #KEYS do
    local f = redis.call("hmget", m, "b" .. i, "be" .. i, "a" .. i, "ae" .. i)
    local b, be, a, ae = f[1], tonumber(f[2]), f[3], tonumber(f[4])
    local still = redis.call("dump", KEYS[i]) == a and (not a or redis.call("pexpiretime", KEYS[i]) == ae)
    if still and not (b == a and be == ae) then
      if not b or (be >= 0 and be <= now) then
        redis.call("del", KEYS[i])
      elseif be < 0 then
        redis.call("restore", KEYS[i], 0, b, "replace")
      else
        redis.call("restore", KEYS[i], be, b, "replace", "absttl")
      end
      done = 1
    end
  end
  return done
end
local function undone(m, ttl)
  local left = redis.call("pttl", m)
  if left > 0 and left < tonumber(ttl) then ttl = left end
  redis.call("del", m)
  redis.call("hset", m, "x", 1)
  redis.call("pexpire", m, ttl)
end
`

var (
	// KEYS: mark, keys; ARGV: mark ttl-ms. A resend (after NOSCRIPT) keeps
	// the first snapshot: the step's first run may have changed a key.
	evalSnapshotScript = newScript(`
local m = KEYS[1]
if redis.call("hexists", m, "n") == 1 then return 0 end
for i = 2, #KEYS do
  local d = redis.call("dump", KEYS[i])
  if d then redis.call("hset", m, "b" .. i, d, "be" .. i, redis.call("pexpiretime", KEYS[i])) end
end
redis.call("hset", m, "n", #KEYS)
redis.call("pexpire", m, ARGV[1])
return 1`)
	// KEYS: mark, keys; ARGV: limit-ms (0: none), mark ttl-ms, release
	// channel, max-ms (0: none), mark slack-ms, then each key's wait key
	// (in the key's slot: a Redis Cluster's master serves only the keys
	// of its slots). Returns {the longest remaining ttl (ms) among the
	// keys, 0 when none has one; the effect, "" for none; per key "1"
	// where the script set its expiry, else "0"; 1 when an expiry passed
	// max-ms and the run was taken back}. A key the script deleted that
	// waiters mark is announced on the release channel, as a release's
	// script does. A mark undone before the step arrived takes the script
	// back at once.
	evalAfterScript = newScript(evalUndoLua + `
local function state(k, i, e)
  local ty = redis.call("type", k)["ok"]
  local s = ""
  if ty == "string" then
    s = redis.call("get", k)
  elseif ty == "hash" then
    local f = redis.call("hgetall", k)
    local at = {}
    for j = 1, #f, 2 do at[#at + 1] = j end
    table.sort(at, function(x, y) return f[x] < f[y] end)
    local p = {}
    for _, j in ipairs(at) do p[#p + 1] = #f[j] .. ":" .. f[j] .. #f[j + 1] .. ":" .. f[j + 1] end
    s = table.concat(p)
  elseif ty ~= "none" then
    s = redis.call("dump", k)
  end
  local x = "n"
  if e >= 0 then x = "e" end
  return i .. ty .. x .. #s .. ":" .. s
end
local m = KEYS[1]
local limit, max = tonumber(ARGV[1]), tonumber(ARGV[4])
local now = nowMs()
local long, last, over = 0, 0, false
local eff, timed = {}, {}
for i = 2, #KEYS do
  local k = KEYS[i]
  local e = redis.call("pexpiretime", k)
  local own = true
  if e == -1 and limit > 0 then
    redis.call("pexpire", k, limit)
    e = redis.call("pexpiretime", k)
    own = false
  end
  local d = redis.call("dump", k)
  local f = redis.call("hmget", m, "b" .. i, "be" .. i)
  local b, be = f[1], tonumber(f[2])
  if d then
    redis.call("hset", m, "a" .. i, d, "ae" .. i, e)
  else
    redis.call("hdel", m, "a" .. i, "ae" .. i)
    if b and redis.call("exists", ARGV[i + 4]) == 1 then
      redis.call("publish", ARGV[3], k)
    end
  end
  local tm = "0"
  if d ~= b or (d and e ~= be) then
    eff[#eff + 1] = state(k, i, e)
    local til = e
    if not d then til = be or -1 end
    if d and e ~= be then
      if own then tm = "1" end
      if max > 0 and e - now > max then over = true end
    end
    if til < 0 then last = -1 elseif last >= 0 and til > last then last = til end
  end
  timed[#timed + 1] = tm
  local p = redis.call("pttl", k)
  if p > long then long = p end
end
redis.call("hset", m, "d", 1)
if redis.call("hexists", m, "x") == 1 then
  undo(m)
  undone(m, ARGV[2])
  return {0, "", "", 0}
end
if over then
  undo(m)
  redis.call("del", m)
  return {0, "", "", 1}
end
if #eff == 0 then
  redis.call("del", m)
  redis.call("hset", m, "d", 1)
  redis.call("pexpire", m, ARGV[5])
  return {long, "", table.concat(timed), 0}
end
if last >= 0 then
  local ttl = math.max(last - now, 0) + tonumber(ARGV[5])
  if ttl < tonumber(ARGV[2]) then redis.call("pexpire", m, ttl) end
end
return {long, redis.sha1hex(table.concat(eff, "|")), table.concat(timed), 0}`)
	// KEYS: mark, keys; ARGV: mark ttl-ms. Undoes the round at the mark,
	// or, where it has not arrived, marks it undone.
	undoEvalScript = newScript(evalUndoLua + `
local m = KEYS[1]
if redis.call("hexists", m, "x") == 1 then return 0 end
local done = 0
if redis.call("hexists", m, "d") == 1 then done = undo(m) end
undone(m, ARGV[1])
return done`)
)

// nodeFailureCodes are the error codes that speak of the server's state,
// not of the script: the node's answer is a failure (no vote), not the
// script's reply.
var nodeFailureCodes = map[string]bool{
	"OOM": true, "READONLY": true, "LOADING": true, "MISCONF": true, "BUSY": true,
	"NOAUTH": true, "NOPERM": true, "MASTERDOWN": true, "NOSCRIPT": true, "EXECABORT": true,
	// A Redis Cluster's: the master does not serve the keys (now).
	"MOVED": true, "ASK": true, "TRYAGAIN": true, "CLUSTERDOWN": true, "CROSSSLOT": true,
}

// isNodeFailure reports whether err is an error reply of a failing
// server (see nodeFailureCodes).
func isNodeFailure(err error) bool {
	var se ServerError
	return errors.As(err, &se) && nodeFailureCodes[se.Code]
}

// buildEval builds a client's script: plain, or marked (see above), on
// the line of cmd.DB; channel is that database's release channel.
func (c *call) buildEval(cmd quorum.Cmd, channel string) {
	if cmd.Script == nil {
		c.err = errors.New("no script")
		return
	}
	c.s = &Script{src: cmd.Script.Src, sha: cmd.Script.SHA}
	c.resp3 = cmd.Script.RESP3
	if cmd.Mark == "" {
		c.script(c.s, readValue, cmd.Keys, cmd.Args...)
		return
	}
	if len(cmd.Keys) == 0 {
		c.err = errNoKeys
		return
	}
	c.marked = &markedEval{keys: cmd.Keys, args: cmd.Args, mark: cmd.Mark,
		ttl: c.ms(cmd.TTL), limit: msOrZero(cmd.Limit), max: msOrZero(cmd.Max), channel: channel}
	c.read = readMarked
	c.req.Buf, c.req.Skip = c.marked.step(c.s, false), 4
}

// buildUndoEval builds UndoEval.
func (c *call) buildUndoEval(cmd quorum.Cmd, _ string) {
	if len(cmd.Keys) == 0 {
		c.err = errNoKeys
		return
	}
	c.script(undoEvalScript, readYes, append([]string{cmd.Mark}, cmd.Keys...), c.ms(cmd.TTL))
}

// buildForgetEval builds ForgetEval: the mark goes.
func (c *call) buildForgetEval(cmd quorum.Cmd, _ string) {
	if cmd.Mark == "" {
		c.err = errNoKeys
		return
	}
	c.command(readYes, "del", cmd.Mark)
}

// markedEval is what a marked script's step is built from, kept to build
// it again with EVAL after NOSCRIPT.
type markedEval struct {
	keys, args            []string
	mark, ttl, limit, max string
	channel               string // the release channel of the script's database
}

// step is the MULTI … EXEC of a marked script; eval sends every script's
// text (after NOSCRIPT: the server lost its scripts).
func (m *markedEval) step(user *Script, eval bool) []byte {
	marked := append([]string{m.mark}, m.keys...)
	buf := resp.AppendCommand(nil, []string{"multi"})
	buf = appendScript(buf, evalSnapshotScript, eval, marked, m.ttl)
	buf = appendScript(buf, user, eval, m.keys, m.args...)
	after := append([]string{m.limit, m.ttl, m.channel, m.max, markSlackMillis}, waitKeys(m.keys)[len(m.keys):]...)
	buf = appendScript(buf, evalAfterScript, eval, marked, after...)
	return resp.AppendCommand(buf, []string{"exec"})
}

// appendScript appends EVALSHA (or, with eval, EVAL) of s over keys and
// then args.
func appendScript(buf []byte, s *Script, eval bool, keys []string, args ...string) []byte {
	return appendScriptTail(buf, s, eval, keys, args, nil)
}

// appendScriptTail is appendScript with one argument more after args,
// given as bytes (nil: none): a number encoded without a string of its
// own.
func appendScriptTail(b []byte, s *Script, eval bool, keys, args []string, tail []byte) []byte {
	nargs := len(args)
	if tail != nil {
		nargs++
	}
	b = appendScriptHead(b, s, eval, len(keys), nargs)
	for _, k := range keys {
		b = appendBulk(b, k)
	}
	for _, a := range args {
		b = appendBulk(b, a)
	}
	if tail != nil {
		b = appendBulk(b, tail)
	}
	return b
}

// readValue reads a plain script's reply.
func readValue(_ *call, rep wire.Reply) (quorum.Reply, error) {
	v := toValue(rep)
	return quorum.Reply{OK: true, Value: &v}, nil
}

// readMarked reads EXEC's reply: the snapshot's, the script's and the
// after step's. A NOSCRIPT anywhere in it is errNoScript (the step is sent
// again with EVAL); an error of the proxy's own scripts is a failure.
func readMarked(_ *call, rep wire.Reply) (quorum.Reply, error) {
	if rep.Kind != '*' || len(rep.Elems) != 3 {
		return quorum.Reply{}, unexpected(rep)
	}
	for _, e := range rep.Elems {
		if err := e.Err(); err != nil && errors.Is(err, errNoScript) {
			return quorum.Reply{}, err
		}
	}
	if err := rep.Elems[1].Err(); err != nil && isNodeFailure(err) {
		return quorum.Reply{}, err
	}
	for _, e := range []wire.Reply{rep.Elems[0], rep.Elems[2]} {
		if err := e.Err(); err != nil {
			return quorum.Reply{}, err
		}
	}
	after := rep.Elems[2]
	if after.Kind != '*' || len(after.Elems) != 4 {
		return quorum.Reply{}, unexpected(after)
	}
	ttl, err := intReply(after.Elems[0])
	if err != nil {
		return quorum.Reply{}, err
	}
	over, err := intReply(after.Elems[3])
	if err != nil {
		return quorum.Reply{}, err
	}
	v := toValue(rep.Elems[1])
	if over == 1 {
		v = quorum.Value{Kind: quorum.ErrorValue, Str: quorum.MsgTTLExceedsMax}
	}
	timed := make([]bool, len(after.Elems[2].Str))
	for i := range timed {
		timed[i] = after.Elems[2].Str[i] == '1'
	}
	return quorum.Reply{OK: true, Value: &v, TTL: time.Duration(ttl) * time.Millisecond,
		Effect: after.Elems[1].Str, Each: timed}, nil
}

// markSlackMillis is EvalMarkSlack as the after step takes it.
var markSlackMillis = strconv.FormatInt(EvalMarkSlack.Milliseconds(), 10)

// toValue converts a reply as Redis converted the script's Lua value for
// the connection's protocol (in RESP2: false is a null bulk, true the
// integer 1, a map a flat array, a double a bulk string).
func toValue(rep wire.Reply) quorum.Value {
	if rep.Null {
		return quorum.Value{Kind: quorum.NilValue}
	}
	switch rep.Kind {
	case ':':
		return quorum.Value{Kind: quorum.IntValue, Int: rep.Num}
	case '#':
		return quorum.Value{Kind: quorum.BoolValue, Int: rep.Num}
	case '*', '%', '~':
		elems := make([]quorum.Value, len(rep.Elems))
		for i, e := range rep.Elems {
			elems[i] = toValue(e)
		}
		return quorum.Value{Kind: valueKinds[rep.Kind], Elems: elems}
	}
	if k, ok := valueKinds[rep.Kind]; ok {
		return quorum.Value{Kind: k, Str: rep.Str}
	}
	return quorum.Value{Kind: quorum.BulkValue, Str: rep.Str}
}

// valueKinds is the Value kind of each reply type.
var valueKinds = map[byte]quorum.ValueKind{
	'+': quorum.StatusValue, '-': quorum.ErrorValue, '*': quorum.ArrayValue,
	'%': quorum.MapValue, '~': quorum.SetValue, ',': quorum.DoubleValue,
	'(': quorum.BigNumValue, '=': quorum.VerbatimValue,
}

// scriptOwnError reports whether err, a plain script's error reply, is
// the script's own (its reply), not the node's failure.
func (c *call) scriptOwnError(err error) bool {
	var se ServerError
	return c.kind == quorum.Eval && c.marked == nil && errors.As(err, &se) && !nodeFailureCodes[se.Code]
}

// resend sends the call again with its scripts' text after NOSCRIPT,
// under the same deadline; false when it was sent so already.
func (c *call) resend() bool {
	if c.s == nil || c.evaled {
		return false
	}
	c.evaled = true
	r := new(wire.Request)
	if c.marked != nil {
		r.Buf, r.Skip = c.marked.step(c.s, true), 4
	} else {
		r.Buf = evalForm(c.sent(), c.s)
	}
	c.send(r, c.req.Deadline())
	return true
}
