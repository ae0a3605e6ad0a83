package embedded

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// rand48 is the generator behind a node's scripts' math.random, one per
// node as a Redis server keeps one for its scripts: POSIX's lrand48, a
// 48-bit linear congruential generator, which Redis's scripts draw from.
// Three nodes that ran the same scripts give the same numbers, as three
// redis-servers do, and a script that seeds it (math.randomseed) gets the
// same numbers on every node, and Redis's. Used under the node's lock.
type rand48 struct {
	x      uint64
	seeded bool
}

const (
	rand48A    = 0x5DEECE66D
	rand48C    = 0xB
	rand48Mask = 1<<48 - 1
	// rand48Start is the state lrand48 starts from unseeded.
	rand48Start = 0x1234ABCD330E
	// rand48Max is the bound Redis divides by: math.random's result is
	// in [0, 1).
	rand48Max = math.MaxInt32
)

// seed sets the state from s, as srand48 does: its 32 bits above 0x330E.
func (g *rand48) seed(s int32) { g.x, g.seeded = uint64(uint32(s))<<16|0x330E, true }

// next steps the generator and returns its top 31 bits.
func (g *rand48) next() int32 {
	if !g.seeded {
		g.x, g.seeded = rand48Start, true
	}
	g.x = (rand48A*g.x + rand48C) & rand48Mask
	return int32(g.x >> 17)
}

// random is math.random on the running script's node, as Redis gives it:
// a number in [0, 1), or an integer in [1, u] or [l, u].
func (vm *luaVM) random(L *lua.LState) int {
	r := float64(vm.rand().next()%rand48Max) / rand48Max
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

// randomseed is math.randomseed on the running script's node.
func (vm *luaVM) randomseed(L *lua.LState) int {
	vm.rand().seed(int32(L.CheckInt(1)))
	return 0
}

// rand is the generator of the node the script runs on.
func (vm *luaVM) rand() *rand48 { return &vm.run.s.m.rand }
