package embedded

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/internal/luanum"
	"github.com/redlockd/redlockd/quorum"
)

var (
	// errScriptLate is a script that ran into its deadline: it was stopped
	// and what it wrote was taken back, so the node answers as if late.
	errScriptLate   = fmt.Errorf("backend: script stopped at the deadline: %w", context.DeadlineExceeded)
	errEvalNoScript = errors.New("backend: Eval without a script")
)

// memScriptBudget bounds a script given no deadline.
const memScriptBudget = 5 * time.Second

// luaChunkName is what runtime errors name the script, as Redis does.
const luaChunkName = "user_script"

// eval is quorum.Eval: the script runs under the node's lock, so it is
// atomic on the node, with time standing still at the command's start as
// on Redis. OK: the script ran (its reply may still be an error).
func (s *memOp) eval() quorum.Reply {
	switch {
	case s.c.Script == nil:
		return quorum.Reply{Err: errEvalNoScript}
	case s.c.DB < 0 || s.c.DB >= memDBs:
		return quorum.Reply{Err: backend.ErrBadDB}
	case s.c.Mark != "" && s.c.TTL <= 0:
		return quorum.Reply{Err: backend.ErrInvalidTTL}
	}
	p, err := compileScript(s.c.Script)
	if err != nil {
		v := errorValue(errCompile + err.Error())
		if sb, ok := err.(shebangError); ok {
			v = errorValue("ERR " + string(sb))
		}
		return quorum.Reply{OK: true, Value: &v}
	}
	r := &luaRun{s: s, db: s.c.DB, stores: p.stores}
	v, late := r.run(p.proto, s.c.Keys, s.c.Args)
	if late {
		r.rollback()
		return quorum.Reply{Err: errScriptLate}
	}
	ttl, effect, timed, over := r.finish()
	if over {
		v = errorValue(quorum.MsgTTLExceedsMax)
	}
	if !s.c.Script.RESP3 {
		v = downgrade(v)
	}
	return quorum.Reply{OK: true, Value: &v, TTL: ttl, Effect: effect, Each: timed}
}

// downgrade is v as Redis gives it to a RESP2 client: a map as a flat
// array, a set as an array, a boolean as 1 or 0, a double, a big number
// and a verbatim string's text as bulk strings.
func downgrade(v quorum.Value) quorum.Value {
	switch v.Kind {
	case quorum.MapValue, quorum.SetValue, quorum.ArrayValue:
		elems := make([]quorum.Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = downgrade(e)
		}
		return quorum.Value{Kind: quorum.ArrayValue, Elems: elems}
	case quorum.BoolValue:
		return intValue(v.Int)
	case quorum.DoubleValue, quorum.BigNumValue:
		return bulkValue(v.Str)
	case quorum.VerbatimValue:
		_, text, _ := strings.Cut(v.Str, ":")
		return bulkValue(text)
	}
	return v
}

// memDBs is how many databases SELECT reaches, as on a default Redis.
const memDBs = 16

// luaRun is one script's run: its current db and every key it wrote, with
// the key as it was before the first write.
type luaRun struct {
	s       *memOp
	db      int
	touched []touchedKey
	// callErr is the last error redis.call raised: the script's reply
	// when it goes uncaught, without the "ERR" of a runtime error.
	callErr string
	// resp3: the script called redis.setresp(3).
	resp3 bool
	// kind: the script is a command kind's (kinds), not a client's: its
	// writes need no undo, its deletes announce nothing, and its PUBLISH
	// on memReleaseChannel announces a release (see byBuild).
	kind bool
	// stores: the client's script has an instruction that stores into a
	// table or a global (storesInTables), so its interpreter is compared
	// with the shared tables before it goes back to the pool.
	stores bool
}

type touchedKey struct {
	key    string // the node's key: memKey(db, key)
	before memState
}

// run executes proto over keys and args until it returns, fails, or
// meets the deadline, on an interpreter from the pool. A kind's own
// script (r.kind) is the node's code, not a client's: it runs without a
// deadline, as a native command would.
func (r *luaRun) run(proto *lua.FunctionProto, keys, args []string) (v quorum.Value, late bool) {
	vm := getLuaVM()
	vm.run = r
	L := vm.L
	L.G.Global.RawSetString("KEYS", stringsTable(L, keys))
	L.G.Global.RawSetString("ARGV", stringsTable(L, args))
	if !r.kind {
		wait := memScriptBudget
		if dl := r.s.m.deadline; !dl.IsZero() {
			wait = time.Until(dl)
		}
		L.SetContext(vm.stop.arm(wait))
	}
	L.Push(L.NewFunctionFromProto(proto))
	err := L.PCall(0, 1, nil)
	if !r.kind && !vm.stop.disarm() {
		vm.discard()
		return quorum.Value{}, true
	}
	if err != nil {
		v = r.scriptError(err)
	} else {
		v = r.toValue(L.Get(-1), 0)
	}
	vm.put(r.stores)
	return v, false
}

// luaStop is the context a client script runs under on one interpreter:
// done closes when the deadline passes. Its timer is set again for each
// run, which costs no allocation; once it has fired, the interpreter is
// dropped with it.
type luaStop struct {
	done  chan struct{}
	timer *time.Timer
}

// arm starts the clock of a run that may take wait.
func (s *luaStop) arm(wait time.Duration) context.Context {
	if s.timer == nil {
		s.done = make(chan struct{})
		s.timer = time.AfterFunc(wait, func() { close(s.done) })
	} else {
		s.timer.Reset(wait)
	}
	return s
}

// disarm stops the clock, false when the deadline came first: the run is
// late, whatever it returned.
func (s *luaStop) disarm() bool { return s.timer.Stop() }

func (s *luaStop) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s *luaStop) Done() <-chan struct{}       { return s.done }
func (s *luaStop) Value(any) any               { return nil }
func (s *luaStop) Err() error {
	select {
	case <-s.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// luaVM is a pooled interpreter: the safe libraries and redis, kept
// from one script to the next. No script hands a change to the next: the
// shared tables (the globals, the libraries, the string metatable) refuse
// new fields, as Redis 7's do, and one whose fields or metatable a script
// changed drops the interpreter instead of returning it to the pool.
type luaVM struct {
	L    *lua.LState
	run  *luaRun  // the script running on it
	args []string // a redis.call's arguments, reused (see call)
	stop luaStop  // a client script's deadline
	seen []luaSeen
	// readonly are the shared tables, which rawset refuses too.
	readonly map[*lua.LTable]bool
}

// luaSeen is one shared table and the fields it held.
type luaSeen struct {
	t    *lua.LTable
	keys []string
	vals []lua.LValue
	meta lua.LValue
}

// luaVMs are the idle interpreters of every node of the process, at
// most luaVMsMax: enough for the scripts that run at once.
var luaVMs struct {
	sync.Mutex
	free []*luaVM
}

const luaVMsMax = 64

func getLuaVM() *luaVM {
	luaVMs.Lock()
	if n := len(luaVMs.free); n > 0 {
		vm := luaVMs.free[n-1]
		luaVMs.free = luaVMs.free[:n-1]
		luaVMs.Unlock()
		return vm
	}
	luaVMs.Unlock()
	return newLuaVM()
}

// put returns vm to the pool when the script left its shared tables as
// they were. check is false for a script that cannot have changed them
// (a kind's own script, a client's without a store instruction):
// comparing every field of every shared table costs more than most
// scripts' run.
func (vm *luaVM) put(check bool) {
	vm.run = nil
	L := vm.L
	L.RemoveContext()
	L.SetTop(0)
	L.Env = L.G.Global
	L.G.Global.RawSetString("KEYS", lua.LNil)
	L.G.Global.RawSetString("ARGV", lua.LNil)
	if check && slices.ContainsFunc(vm.seen, func(s luaSeen) bool { return !s.same(L) }) {
		L.Close()
		return
	}
	luaVMs.Lock()
	defer luaVMs.Unlock()
	if len(luaVMs.free) < luaVMsMax {
		luaVMs.free = append(luaVMs.free, vm)
	} else {
		L.Close()
	}
}

// discard drops vm: a stopped script may leave it mid-call.
func (vm *luaVM) discard() {
	vm.run = nil
	vm.L.RemoveContext()
	vm.L.Close()
}

func (s *luaSeen) same(L *lua.LState) bool {
	if L.GetMetatable(s.t) != s.meta {
		return false
	}
	for i, k := range s.keys {
		if s.t.RawGetString(k) != s.vals[i] {
			return false
		}
	}
	return true
}

// see makes t one of the shared tables: read-only to new fields, and
// remembered as it is now.
func (vm *luaVM) see(L *lua.LState, t *lua.LTable, readonly *lua.LTable) {
	if L.GetMetatable(t) == lua.LNil {
		L.SetMetatable(t, readonly)
	}
	s := luaSeen{t: t, meta: L.GetMetatable(t)}
	t.ForEach(func(k, v lua.LValue) {
		if ks, ok := k.(lua.LString); ok {
			s.keys = append(s.keys, string(ks))
			s.vals = append(s.vals, v)
		}
	})
	vm.seen = append(vm.seen, s)
	vm.readonly[t] = true
}

// rawset is the base library's, refusing the shared tables.
func (vm *luaVM) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if vm.readonly[t] {
		luaReadonly(L)
	}
	t.RawSet(L.CheckAny(2), L.CheckAny(3))
	L.Push(t)
	return 1
}

// refuseShared is the library function fn refusing a shared table as
// its first argument, as Redis 7's setmetatable and table.insert do: the
// library functions that could change one without a store instruction
// (rawset is refused the same way). table.remove and table.sort change
// nothing in a table without array elements, which no shared table has.
func (vm *luaVM) refuseShared(g lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.readonly[t] {
			luaReadonly(L)
		}
		return g(L)
	}
}

// luaReadonly raises Redis 7's error for a change to a shared table.
func luaReadonly(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

// scriptError is the reply of a script that raised err: redis.call's
// error, or an error table, answers its text; anything else is a runtime
// error.
func (r *luaRun) scriptError(err error) quorum.Value {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return errorValue("ERR " + err.Error())
	}
	switch o := ae.Object.(type) {
	case *lua.LTable:
		if e, ok := o.RawGetString("err").(lua.LString); ok {
			return errorValue(string(e))
		}
	case lua.LString:
		if r.callErr != "" && string(o) == r.callErr {
			return errorValue(r.callErr)
		}
	}
	return errorValue("ERR " + ae.Object.String())
}

// luaUnsafe are the globals of the base library a script must not have:
// they read files, compile code at run time or reach the host.
var luaUnsafe = []string{"dofile", "loadfile", "load", "loadstring", "module", "require",
	"print", "newproxy", "_printregs", "_GOPHER_LUA_VERSION"}

// A script's interpreter starts small (most lock scripts need a few
// dozen slots) and may grow to these bounds: Redis's own limit on nested
// calls, and a data stack far past any lock script's.
const (
	luaCallDepth   = 200
	luaRegistryMax = 1 << 20
)

// newLuaVM is an interpreter with the safe libraries and redis; KEYS and
// ARGV are set for each run. No script sees another's globals: creating
// one is an error, and a changed one drops the interpreter (put).
func newLuaVM() *luaVM {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistrySize: 256, RegistryMaxSize: luaRegistryMax,
		CallStackSize: luaCallDepth, MinimizeStackMemory: true})
	vm := &luaVM{L: L}
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.StringLibName, lua.OpenString},
		{lua.TabLibName, lua.OpenTable}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range luaUnsafe {
		L.SetGlobal(name, lua.LNil)
	}
	g := L.G.Global
	str, tab := g.RawGetString("string").(*lua.LTable), g.RawGetString("table").(*lua.LTable)
	m := g.RawGetString("math").(*lua.LTable)
	// wrap puts in place of the library function t[name] the one with
	// makes of it.
	wrap := func(t *lua.LTable, name string, with func(lua.LGFunction) lua.LGFunction) {
		t.RawSetString(name, L.NewFunction(with(t.RawGetString(name).(*lua.LFunction).GFunction)))
	}
	wrap(str, "gsub", boundedGsub)
	wrap(g, "tonumber", luaToNumber)
	wrap(g, "setmetatable", vm.refuseShared)
	wrap(tab, "insert", vm.refuseShared)
	wrap(tab, "concat", boundedConcat)
	str.RawSetString("rep", L.NewFunction(luaStrRep))
	str.RawSetString("byte", L.NewFunction(luaStrByte))
	m.RawSetString("random", L.NewFunction(vm.random))
	m.RawSetString("randomseed", L.NewFunction(vm.randomseed))
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	g.RawSetString("redis", vm.redisTable(L))
	g.RawSetString("rawset", L.NewFunction(vm.rawset))
	protectGlobals(L)
	vm.readonly = make(map[*lua.LTable]bool)
	readonly := L.NewTable()
	readonly.RawSetString("__newindex", L.NewFunction(luaReadonly))
	vm.see(L, readonly, readonly)
	vm.see(L, L.G.Global, readonly)
	L.G.Global.ForEach(func(_, v lua.LValue) {
		if t, ok := v.(*lua.LTable); ok && t != L.G.Global {
			vm.see(L, t, readonly)
		}
	})
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		vm.see(L, mt, readonly)
	}
	return vm
}

// protectGlobals makes reading or creating an undefined global an error,
// as Redis 7 does, so that a script behaves alike on both kinds of node.
func protectGlobals(L *lua.LState) {
	mt := L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(luaReadonly))
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckString(2))
		return 0
	}))
	L.SetMetatable(L.G.Global, mt)
}

// luaRepMax bounds string.rep, whose result the interpreter allocates in
// one step that no deadline interrupts.
const luaRepMax = 64 << 20

func luaStrRep(L *lua.LState) int {
	str, n := L.CheckString(1), L.CheckInt(2)
	if n > 0 && len(str) > 0 && n > luaRepMax/len(str) {
		L.RaiseError("string.rep: result too large")
	}
	L.Push(lua.LString(strings.Repeat(str, max(n, 0))))
	return 1
}

// boundedGsub refuses a string replacement whose result could pass
// luaRepMax: each match of s expands to at most len(repl) times itself.
// A function or table replacement runs Lua, which the deadline stops.
func boundedGsub(gsub lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		s := L.CheckString(1)
		if repl, ok := L.Get(3).(lua.LString); ok && (len(s)+1)*len(repl) > luaRepMax {
			L.RaiseError("string.gsub: result too large")
		}
		return gsub(L)
	}
}

// boundedConcat refuses a table.concat whose result would pass
// luaRepMax, before the interpreter allocates it in one step. It sums
// the lengths of the elements the call joins, up to the first that is
// neither a string nor a number, where the call itself fails.
func boundedConcat(concat lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		t := L.CheckTable(1)
		sep := len(L.OptString(2, ""))
		i, j := L.OptInt(3, 1), L.OptInt(4, t.Len())
		total := 0
		for k := i; k <= j; k++ {
			switch v := t.RawGetInt(k).(type) {
			case lua.LString:
				total += len(v)
			case lua.LNumber:
				total += len(v.String())
			default:
				return concat(L)
			}
			if k < j {
				total += sep
			}
			if total > luaRepMax {
				L.RaiseError("table.concat: result too large")
			}
		}
		return concat(L)
	}
}

// luaMaxResults bounds what one call of unpack or string.byte returns,
// as Lua 5.1's stack limit does: the interpreter pushes them in one step
// that no deadline interrupts.
const luaMaxResults = 8000

func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i, j := L.OptInt(2, 1), L.OptInt(3, t.Len())
	return pushRange(L, i, j, "too many results to unpack", func(k int) lua.LValue { return t.RawGetInt(k) })
}

func luaStrByte(L *lua.LState) int {
	s := L.CheckString(1)
	i := L.OptInt(2, 1)
	j := L.OptInt(3, i)
	if i < 0 {
		i = max(len(s)+i+1, 1)
	}
	if j < 0 {
		j = len(s) + j + 1
	}
	i, j = max(i, 1), min(j, len(s))
	return pushRange(L, i, j, "string slice too long", func(k int) lua.LValue { return lua.LNumber(s[k-1]) })
}

// pushRange pushes at(i)…at(j), refusing more than luaMaxResults.
func pushRange(L *lua.LState, i, j int, tooMany string, at func(int) lua.LValue) int {
	if i > j {
		return 0
	}
	if n := j - i; n < 0 || n >= luaMaxResults { // n < 0: it overflowed
		L.RaiseError("%s", tooMany)
	}
	for k := i; k <= j; k++ {
		L.Push(at(k))
	}
	return j - i + 1
}

func stringsTable(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for i, s := range ss {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// redisTable is the script's redis library, for the script running on vm.
func (vm *luaVM) redisTable(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.run.call(L, true, &vm.args) },
		"pcall":              func(L *lua.LState) int { return vm.run.call(L, false, &vm.args) },
		"error_reply":        func(L *lua.LState) int { return replyTable(L, "err") },
		"status_reply":       func(L *lua.LState) int { return replyTable(L, "ok") },
		"sha1hex":            luaSHA1Hex,
		"log":                luaLog,
		"setresp":            func(L *lua.LState) int { return vm.run.setResp(L) },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		// The node replicates nothing: a script's effects are its own.
		"set_repl": func(L *lua.LState) int { L.CheckInt(1); return 0 },
	})
	for i, name := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		t.RawSetString(name, lua.LNumber(i))
	}
	for name, v := range map[string]int{"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	return t
}

// call is redis.call (raise: an error reply raises its text, which a
// Lua pcall catches as a string, as on Redis 7) and redis.pcall (it
// returns the error as a table). buf holds the arguments, reused from
// one call to the next.
func (r *luaRun) call(L *lua.LState, raise bool, buf *[]string) int {
	args, msg := luaArgs(L, (*buf)[:0])
	v := errorValue(msg)
	hgetall := false
	if msg == "" {
		v = r.command(args)
		hgetall = r.resp3 && strings.EqualFold(args[0], "hgetall")
		clear(args)
		*buf = args[:0]
	}
	if raise && v.Kind == quorum.ErrorValue {
		r.callErr = v.Str
		L.Error(lua.LString(v.Str), 0)
	}
	if hgetall && v.Kind == quorum.ArrayValue {
		v.Kind = quorum.MapValue // RESP3's reply of HGETALL
	}
	L.Push(r.valueToLua(L, v))
	return 1
}

// luaArgs reads a redis.call's arguments: strings, or numbers as Redis
// prints them, appended to args. msg is the error when they are not.
func luaArgs(L *lua.LState, args []string) ([]string, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "ERR Please specify at least one argument for this redis lib call"
	}
	args = slices.Grow(args, n)[:n]
	for i := range args {
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			args[i] = string(v)
		case lua.LNumber:
			args[i] = luanum.Arg(float64(v))
		default:
			return nil, "ERR Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

func replyTable(L *lua.LState, field string) int {
	L.Push(fieldTable(L, field, L.CheckString(1)))
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	sum := sha1.Sum([]byte(L.CheckString(1)))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

// luaLog takes redis.log's lines to the default logger at debug level:
// the same line comes from every node of the quorum.
func luaLog(L *lua.LState) int {
	if L.GetTop() < 2 {
		L.RaiseError("redis.log() requires two arguments or more.")
	}
	L.CheckInt(1)
	parts := make([]string, 0, L.GetTop()-1)
	for i := 2; i <= L.GetTop(); i++ {
		parts = append(parts, L.CheckString(i))
	}
	slog.Debug(strings.Join(parts, " "), "component", "script")
	return 0
}

// setResp is redis.setresp: with 3, command replies reach the script in
// RESP3's forms (a map is {map=…}, a null is nil) and its booleans are
// RESP3 booleans, as on Redis 7.
func (r *luaRun) setResp(L *lua.LState) int {
	switch L.CheckInt(1) {
	case 2:
		r.resp3 = false
	case 3:
		r.resp3 = true
	default:
		L.RaiseError("RESP version must be 2 or 3.")
	}
	return 0
}

// luaMaxDepth bounds the nesting of a reply table, so that a table that
// holds itself is an error and not an endless conversion.
const luaMaxDepth = 64

// toValue converts a script's reply as Redis 7 does.
func (r *luaRun) toValue(lv lua.LValue, depth int) quorum.Value {
	switch v := lv.(type) {
	case lua.LString:
		return bulkValue(string(v))
	case lua.LNumber:
		return intValue(int64(v))
	case lua.LBool:
		switch {
		case r.resp3 && bool(v):
			return quorum.Value{Kind: quorum.BoolValue, Int: 1}
		case r.resp3:
			return quorum.Value{Kind: quorum.BoolValue}
		case bool(v):
			return intValue(1)
		}
	case *lua.LTable:
		return r.tableToValue(v, depth)
	}
	return valueNil
}

func (r *luaRun) tableToValue(t *lua.LTable, depth int) quorum.Value {
	if depth >= luaMaxDepth {
		return errorValue("ERR reached lua stack limit")
	}
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		return errorValue(string(e))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return quorum.Value{Kind: quorum.StatusValue, Str: string(s)}
	}
	if v, ok := r.resp3TableValue(t, depth); ok {
		return v
	}
	arr := quorum.Value{Kind: quorum.ArrayValue, Elems: []quorum.Value{}}
	for i := 1; ; i++ {
		e := t.RawGetInt(i)
		if e == lua.LNil {
			return arr
		}
		arr.Elems = append(arr.Elems, r.toValue(e, depth+1))
	}
}

// resp3TableValue converts the tables that stand for RESP3's types, in
// Redis 7's order: {double=n}, {big_number=s}, {verbatim_string={format=f,
// string=s}}, {map=t} (each pair of t, in the table's order) and {set=t}
// (t's keys). The writer gives a RESP2 client what Redis gives it.
func (r *luaRun) resp3TableValue(t *lua.LTable, depth int) (quorum.Value, bool) {
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		return quorum.Value{Kind: quorum.DoubleValue, Str: luanum.Arg(float64(n))}, true
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return quorum.Value{Kind: quorum.BigNumValue, Str: string(s)}, true
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, okf := vt.RawGetString("format").(lua.LString)
		s, oks := vt.RawGetString("string").(lua.LString)
		if okf && oks {
			return quorum.Value{Kind: quorum.VerbatimValue, Str: string(f) + ":" + string(s)}, true
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		v := quorum.Value{Kind: quorum.MapValue, Elems: []quorum.Value{}}
		m.ForEach(func(k, e lua.LValue) {
			v.Elems = append(v.Elems, r.toValue(k, depth+1), r.toValue(e, depth+1))
		})
		return v, true
	}
	if st, ok := t.RawGetString("set").(*lua.LTable); ok {
		v := quorum.Value{Kind: quorum.SetValue, Elems: []quorum.Value{}}
		st.ForEach(func(k, _ lua.LValue) { v.Elems = append(v.Elems, r.toValue(k, depth+1)) })
		return v, true
	}
	return quorum.Value{}, false
}

// valueToLua converts a command's reply for the script as Redis 7 does.
func (r *luaRun) valueToLua(L *lua.LState, v quorum.Value) lua.LValue {
	switch v.Kind {
	case quorum.IntValue:
		return lua.LNumber(v.Int)
	case quorum.BulkValue:
		return lua.LString(v.Str)
	case quorum.StatusValue:
		return fieldTable(L, "ok", v.Str)
	case quorum.ErrorValue:
		return fieldTable(L, "err", v.Str)
	case quorum.ArrayValue:
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, r.valueToLua(L, e))
		}
		return t
	case quorum.MapValue:
		m := L.CreateTable(0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(r.valueToLua(L, v.Elems[i]), r.valueToLua(L, v.Elems[i+1]))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t
	}
	if r.resp3 {
		return lua.LNil // RESP3's null
	}
	return lua.LFalse
}

func fieldTable(L *lua.LState, field, s string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(field, lua.LString(s))
	return t
}

func errorValue(msg string) quorum.Value {
	return quorum.Value{Kind: quorum.ErrorValue, Str: msg}
}

// luaProtos caches compiled scripts by SHA1 for every node of the
// process: a compiled function is read-only and shared by interpreters.
var luaProtos struct {
	sync.Mutex
	m map[string]luaProto
}

type luaProto struct {
	src   string
	proto *lua.FunctionProto
	// stores: storesInTables(proto).
	stores bool
}

// storesInTables reports whether proto or a function nested in it has an
// instruction that stores into a table's field or a global. A script
// without one (most lock scripts) can change a shared table only through
// a library function, and those that could refuse the shared tables
// (refuseShared): its interpreter needs no comparison when it goes back
// to the pool. SETLIST is left out: the compiler emits it only to fill
// the table a constructor has just made. The opcode is an instruction's
// top 6 bits, as the interpreter decodes it; TestStoresInTables holds
// this to the compiler's output.
func storesInTables(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		switch int(inst >> 26) {
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETGLOBAL:
			return true
		}
	}
	for _, p := range proto.FunctionPrototypes {
		if storesInTables(p) {
			return true
		}
	}
	return false
}

// luaProtosMax bounds the cache; past it an arbitrary entry makes room.
const luaProtosMax = 1024

// compileScript returns sc compiled, from the cache when a script of the
// same SHA1 and text was compiled before.
func compileScript(sc *quorum.Script) (luaProto, error) {
	luaProtos.Lock()
	p, ok := luaProtos.m[sc.SHA]
	luaProtos.Unlock()
	if ok && p.src == sc.Src {
		return p, nil
	}
	body, err := stripShebang(sc.Src)
	if err != nil {
		return luaProto{}, err
	}
	proto, err := compileLua(body)
	if err != nil {
		return luaProto{}, err
	}
	p = luaProto{src: sc.Src, proto: proto, stores: storesInTables(proto)}
	luaProtos.Lock()
	defer luaProtos.Unlock()
	if luaProtos.m == nil {
		luaProtos.m = make(map[string]luaProto)
	}
	if len(luaProtos.m) >= luaProtosMax {
		for k := range luaProtos.m {
			delete(luaProtos.m, k)
			break
		}
	}
	luaProtos.m[sc.SHA] = p
	return p, nil
}

// shebangError is a script's first line that Redis refuses: the reply
// is its message, not a compile error.
type shebangError string

func (e shebangError) Error() string { return string(e) }

// shebangFlags are the flags Redis 7 takes on a script's "#!lua" line.
var shebangFlags = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// stripShebang reads a script's first line as Redis 7 does when it
// starts with "#!": a line of its own, whose engine must be lua and
// whose only option is flags=, each flag one that Redis knows. The line
// is not Lua, and is blanked (its newline stays, so that line numbers
// are kept). The flags change
// nothing here: no-writes is the static check's, the others name server
// states an embedded node does not have.
func stripShebang(src string) (string, error) {
	if !strings.HasPrefix(src, "#!") {
		return src, nil
	}
	i := strings.IndexByte(src, '\n')
	if i < 0 {
		return "", shebangError("Invalid script shebang")
	}
	line, rest := src[:i], src[i:]
	words := strings.Fields(line[2:])
	if len(words) == 0 || words[0] != "lua" {
		return "", shebangError("Unexpected engine in script shebang: " + line)
	}
	for _, w := range words[1:] {
		flags, ok := strings.CutPrefix(w, "flags=")
		if !ok {
			return "", shebangError("Unknown lua shebang option: " + w)
		}
		for f := range strings.SplitSeq(flags, ",") {
			if f != "" && !slices.Contains(shebangFlags, f) {
				return "", shebangError("Unexpected flag in script shebang: " + f)
			}
		}
	}
	return rest, nil
}

// compileLua parses and compiles src; a panic of the parser on some
// input is a compile error, never the node's crash.
func compileLua(src string) (proto *lua.FunctionProto, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	chunk, err := parse.Parse(strings.NewReader(src), luaChunkName)
	if err != nil {
		return nil, err
	}
	proto, err = lua.Compile(chunk, luaChunkName)
	if err == nil {
		// A chunk is a vararg function, for which Lua 5.1 builds an "arg"
		// table on every call; no name of the chunk reaches it (arg is a
		// local of nested functions only), so none is built.
		proto.IsVarArg &^= lua.VarArgNeedsArg
	}
	return proto, err
}
