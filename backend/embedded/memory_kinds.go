package embedded

import (
	"fmt"
	"strconv"
	"sync"

	lua "github.com/yuin/gopher-lua"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// memReleaseChannel is the in-memory node's release channel: a kind's
// script that publishes a released key on it announces the release to
// the node's watchers, in the database the script runs in.
const memReleaseChannel = "redlockd:memory:released"

// byBuild runs the command as a Redis node runs it: the kind's build
// gives the command or script, the node's engine runs it over the node's
// keys, and the kind's reader reads its reply. So the kind's semantics
// are written once, in its script.
func (s *memOp) byBuild() quorum.Reply {
	c, err := backend.Build(s.c, memReleaseChannel)
	if err != nil {
		return quorum.Reply{Err: fmt.Errorf("backend: %s: %w", backend.OpName(s.c.Kind), err)}
	}
	r := &luaRun{s: s, db: s.c.DB, kind: true}
	if backend.IsServerWide(s.c.Kind) {
		r.db = 0 // the horizon lives in database 0, as on a redis-server
	}
	args, ok := splitCommand(c.Command())
	var v quorum.Value
	switch {
	case !ok:
		v = errorValue("ERR Protocol error")
	case c.Script() != nil:
		v = r.runScript(c.Script(), args)
	default:
		v = r.command(args)
	}
	rep := replyOf(v)
	err = rep.Err()
	var out quorum.Reply
	if err == nil {
		out, err = c.Read(rep)
	}
	if err != nil {
		// A reply about the key (WRONGTYPE) as a Redis node gives it,
		// with Get's ttl kept (see backend.KeyError).
		err = backend.KeyError(s.c.Kind, err)
		return quorum.Reply{Err: fmt.Errorf("backend: %s: %w", backend.OpName(s.c.Kind), err), TTL: backend.KeyErrorTTL(s.c.Kind, err, out)}
	}
	return out
}

// runScript runs sc, the script of an encoded EVALSHA whose words are
// args: "evalsha", the SHA1, the number of keys, the keys, the arguments.
func (r *luaRun) runScript(sc *backend.Script, args []string) quorum.Value {
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 0 || 3+n > len(args) {
		return errorValue("ERR Number of keys can't be greater than number of args")
	}
	proto, err := compiled(sc)
	if err != nil {
		return errorValue(errCompile + err.Error())
	}
	v, _ := r.run(proto, args[3:3+n], args[3+n:])
	return v
}

// compiledKinds holds each kind script's compiled form, by script: the
// kinds' scripts are a fixed set, each compiled once for the node.
var compiledKinds sync.Map // *backend.Script → func() (*lua.FunctionProto, error)

// compiled is sc compiled once for the in-memory node.
func compiled(sc *backend.Script) (*lua.FunctionProto, error) {
	v, ok := compiledKinds.Load(sc)
	if !ok {
		v, _ = compiledKinds.LoadOrStore(sc, sync.OnceValues(func() (*lua.FunctionProto, error) { return compileLua(sc.Src()) }))
	}
	return v.(func() (*lua.FunctionProto, error))()
}

// splitCommand reads the words of one encoded command (an array of bulk
// strings, as resp.AppendCommand writes it). The words share one copy of
// the command.
func splitCommand(buf []byte) ([]string, bool) {
	n, b, ok := respNumber(buf, '*')
	if !ok || n < 1 || n > len(b)/6 { // a word takes at least "$0\r\n\r\n"
		return nil, false
	}
	all := string(buf)
	words := make([]string, n)
	for i := range words {
		var size int
		if size, b, ok = respNumber(b, '$'); !ok || size < 0 || size+2 > len(b) {
			return nil, false
		}
		at := len(buf) - len(b)
		words[i] = all[at : at+size]
		b = b[size+2:]
	}
	return words, true
}

// respNumber reads "<prefix><digits>\r\n" at the start of b.
func respNumber(b []byte, prefix byte) (int, []byte, bool) {
	if len(b) < 4 || b[0] != prefix {
		return 0, nil, false
	}
	n, i := 0, 1
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, nil, false
	}
	return n, b[i+2:], true
}

// replyOf is v as a Redis node's RESP2 reply reads.
func replyOf(v quorum.Value) wire.Reply {
	switch v.Kind {
	case quorum.IntValue, quorum.BoolValue:
		return wire.Reply{Kind: ':', Num: v.Int}
	case quorum.BulkValue, quorum.DoubleValue, quorum.BigNumValue, quorum.VerbatimValue:
		return wire.Reply{Kind: '$', Str: v.Str}
	case quorum.StatusValue:
		return wire.Reply{Kind: '+', Str: v.Str}
	case quorum.ErrorValue:
		return wire.Reply{Kind: '-', Str: v.Str}
	case quorum.ArrayValue, quorum.MapValue, quorum.SetValue:
		elems := make([]wire.Reply, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = replyOf(e)
		}
		return wire.Reply{Kind: '*', Elems: elems}
	}
	return wire.Reply{Kind: '$', Null: true}
}
