package scriptcheck

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Sentinels of the sandbox: every KEYS element is a value no ARGV element
// and no literal of a seed holds.
var (
	sandboxKeys = []string{"\x01key-one", "\x01key-two", "\x01key-three"}
	sandboxArgv = []string{"1", "1000", "argv-three", "publish"}
)

// sandboxRun runs an admitted script in gopher-lua with a redis.call and
// redis.pcall that record every command and fail on a command the check
// does not admit or on a key position that does not hold a KEYS value.
// It returns the violations; the script's own errors are no violation.
func sandboxRun(src string) []string {
	if strings.HasPrefix(src, "#!") {
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			src = src[i:]
		} else {
			src = ""
		}
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	// A huge string.rep would only measure the machine.
	L.SetField(L.GetGlobal("string"), "rep", L.NewFunction(func(L *lua.LState) int {
		if L.CheckInt(2)*len(L.CheckString(1)) > 1<<16 {
			L.RaiseError("string.rep too large for the sandbox")
		}
		L.Push(lua.LString(strings.Repeat(L.CheckString(1), L.CheckInt(2))))
		return 1
	}))
	L.SetGlobal("KEYS", stringTable(L, sandboxKeys))
	L.SetGlobal("ARGV", stringTable(L, sandboxArgv))
	var violations []string
	rec := &recorder{violations: &violations}
	L.SetGlobal("redis", sandboxRedis(L, rec))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	L.SetContext(ctx)
	_ = L.DoString(src)
	return violations
}

func stringTable(L *lua.LState, vals []string) *lua.LTable {
	t := L.NewTable()
	for _, v := range vals {
		t.Append(lua.LString(v))
	}
	return t
}

func sandboxRedis(L *lua.LState, rec *recorder) *lua.LTable {
	r := L.NewTable()
	r.RawSetString("call", L.NewFunction(rec.call))
	r.RawSetString("pcall", L.NewFunction(rec.call))
	for _, name := range []string{"sha1hex", "error_reply", "status_reply", "log", "setresp", "replicate_commands"} {
		r.RawSetString(name, L.NewFunction(func(L *lua.LState) int { L.Push(lua.LString("x")); return 1 }))
	}
	for i, name := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		r.RawSetString(name, lua.LNumber(i))
	}
	return r
}

type recorder struct {
	violations *[]string
	calls      int
}

// call is the sandbox's redis.call: it checks the command and its key
// positions and answers something plausible, so that both branches of a
// script's conditions are reached across seeds.
func (rec *recorder) call(L *lua.LState) int {
	rec.calls++
	if rec.calls > 10000 {
		L.RaiseError("too many calls for the sandbox")
	}
	n := L.GetTop()
	args := make([]lua.LValue, n)
	for i := range args {
		args[i] = L.Get(i + 1)
		if args[i].Type() != lua.LTString && args[i].Type() != lua.LTNumber {
			L.RaiseError("Lua redis lib command arguments must be strings or integers")
		}
	}
	if n == 0 {
		L.RaiseError("Please specify at least one argument for this redis lib call")
	}
	name := strings.ToUpper(args[0].String())
	rec.checkCommand(name, args[1:])
	L.Push(rec.reply(L, name))
	return 1
}

func (rec *recorder) violate(format string, a ...any) {
	*rec.violations = append(*rec.violations, fmt.Sprintf(format, a...))
}

func (rec *recorder) checkCommand(name string, args []lua.LValue) {
	if name == "SELECT" {
		return
	}
	a, ok := admitted[name]
	if !ok {
		rec.violate("command %s is not admitted", name)
		return
	}
	for i, arg := range args {
		if a.keys == keyAll || (a.keys == keyFirst && i == 0) || (a.keys == keyPairs && i%2 == 0) {
			if !isSandboxKey(arg) {
				rec.violate("%s got key %q, not a KEYS value", name, arg.String())
			}
		}
	}
}

func isSandboxKey(v lua.LValue) bool {
	s, ok := v.(lua.LString)
	if !ok {
		return false
	}
	for _, k := range sandboxKeys {
		if string(s) == k {
			return true
		}
	}
	return false
}

func (rec *recorder) reply(L *lua.LState, name string) lua.LValue {
	switch name {
	case "GET", "HGET":
		if rec.calls%2 == 0 {
			return lua.LFalse
		}
		return lua.LString(sandboxArgv[0])
	case "HGETALL", "HKEYS", "HVALS", "HMGET", "MGET":
		return stringTable(L, []string{"f", "1"})
	case "EXISTS", "HEXISTS":
		return lua.LNumber(rec.calls % 2)
	}
	return lua.LNumber(1)
}

// fuzzSeeds are the library scripts and the cases of the tests.
func fuzzSeeds(t testing.TB) []string {
	var seeds []string
	files, err := filepath.Glob("testdata/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		seeds = append(seeds, readScript(t, filepath.Base(f)))
	}
	for _, tc := range admittedCases {
		seeds = append(seeds, tc.src)
	}
	for _, tc := range refusedCases {
		seeds = append(seeds, tc.src)
	}
	return append(seeds, multiKeyObtain, multiKeyRelease, tripleLoop)
}

// FuzzCheck: a script that Check admits touches, when run, only keys from
// KEYS and only admitted commands; every refusal is one line.
func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		info, err := Check(src)
		if err == nil {
			err = ArgNamesOK(info, sandboxArgv) // the proxy's check at run time
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error %q is not one line", err)
			}
			return
		}
		if v := sandboxRun(src); len(v) > 0 {
			t.Fatalf("admitted %q, which ran %v", src, v)
		}
	})
}

// TestSandboxSeesViolations: the sandbox itself finds a key outside KEYS
// and a command the check refuses, so FuzzCheck can fail.
func TestSandboxSeesViolations(t *testing.T) {
	for _, src := range []string{
		`redis.call('GET', 'foo')`,
		`redis.call('ZADD', KEYS[1], 1, 'x')`,
		`redis.call('DEL', KEYS[1], ARGV[1])`,
		`redis.call('MSET', KEYS[1], 1, ARGV[1], 2)`,
		`redis.call(ARGV[1], KEYS[1])`,
	} {
		if v := sandboxRun(src); len(v) == 0 {
			t.Errorf("the sandbox saw nothing wrong in %q", src)
		}
	}
	for _, src := range fuzzSeeds(t) {
		if info, err := Check(src); err == nil && ArgNamesOK(info, sandboxArgv) == nil {
			if v := sandboxRun(src); len(v) > 0 {
				t.Errorf("admitted seed %q ran %v", src, v)
			}
		}
	}
}
