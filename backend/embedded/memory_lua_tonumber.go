package embedded

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/redlockd/redlockd/internal/luanum"
)

// luaToNumber is Lua 5.1's tonumber as a Redis server runs it (luanum:
// C's strtod), in place of gopher-lua's own reading of a string, which
// differs ("1e0" and "0x1p1" are numbers on Redis, not in gopher-lua);
// orig, gopher-lua's, serves a base other than 10.
func luaToNumber(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil && L.Get(2) != lua.LNumber(10) {
			return orig(L)
		}
		L.CheckAny(1)
		switch v := L.Get(1).(type) {
		case lua.LNumber:
			L.Push(v)
		case lua.LString:
			if f, ok := luanum.ToNumber(string(v)); ok {
				L.Push(lua.LNumber(f))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
}
