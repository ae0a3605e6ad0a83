package scriptcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"

	"github.com/redlockd/redlockd/quorum"
)

// Globals a script may call: pure helpers whose running time is bounded by
// their arguments. They may only be called, never stored or passed.
var pureFuncs = map[string]bool{
	"tonumber": true, "tostring": true, "type": true, "ipairs": true, "pairs": true,
	"unpack": true, "next": true, "select": true, "error": true, "assert": true,
	"pcall": true, "rawequal": true,
}

// pureLibs are the library tables whose functions a script may call.
var pureLibs = map[string]bool{
	"string": true, "table": true, "math": true, "cjson": true,
	"cmsgpack": true, "bit": true, "struct": true,
}

// redisHelpers are the redis.* functions besides call and pcall that a
// script may call; redisConsts the values it may read.
var (
	redisHelpers = map[string]bool{
		"sha1hex": true, "error_reply": true, "status_reply": true, "log": true,
		"setresp": true, "replicate_commands": true,
	}
	redisConsts = map[string]bool{
		"LOG_DEBUG": true, "LOG_VERBOSE": true, "LOG_NOTICE": true, "LOG_WARNING": true,
	}
)

// escaping are globals that run code or change state the check cannot see.
var escaping = map[string]bool{
	"loadstring": true, "load": true, "dofile": true, "loadfile": true, "require": true,
	"getfenv": true, "setfenv": true, "rawset": true, "rawget": true, "setmetatable": true,
	"getmetatable": true, "_G": true, "module": true, "newproxy": true, "collectgarbage": true,
	"os": true, "io": true, "debug": true, "coroutine": true, "xpcall": true,
}

func (w *walker) expr(e ast.Expr, u use) {
	w.enter()
	defer w.leave()
	switch e := e.(type) {
	case *ast.StringExpr:
		// What KEYS and ARGV may not name (the command table refuses
		// them), the body may not write in: a key, a value or a channel
		// of the proxy's own, such as a semaphore's marker.
		if strings.HasPrefix(e.Value, quorum.ReservedPrefix) {
			fail("the string %q is in redlockd's reserved namespace (%q…: keys, values and channels of the proxy's own)", oneLine(e.Value), quorum.ReservedPrefix)
		}
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr, *ast.Comma3Expr:
	case *ast.IdentExpr:
		w.ident(e, u)
	case *ast.AttrGetExpr:
		w.attrGet(e)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				w.expr(f.Key, useRead)
			}
			w.expr(f.Value, useValue)
		}
	case *ast.FuncCallExpr:
		w.call(e)
	case *ast.LogicalOpExpr:
		// Either operand may be the result: it is used as the whole is.
		w.expr(e.Lhs, u)
		w.cond++
		w.maybe++
		w.expr(e.Rhs, u)
		w.maybe--
		w.cond--
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs, useRead)
		w.expr(e.Rhs, useRead)
	case *ast.StringConcatOpExpr:
		w.concat(e, true)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs, useRead)
		w.expr(e.Rhs, useRead)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr, useRead)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr, useRead)
	case *ast.UnaryLenOpExpr:
		if !w.global(e.Expr, "KEYS") && !w.global(e.Expr, "ARGV") {
			w.expr(e.Expr, useRead)
		}
	case *ast.FunctionExpr:
		fail("a function used as a value (only local functions called by name can be checked)")
	default:
		fail("an expression the check does not know")
	}
}

// ident checks a name used as u.
func (w *walker) ident(e *ast.IdentExpr, u use) {
	if l := w.lookup(e.Value); l != nil {
		if !w.final {
			w.pairBad[l.id] = true
		}
		switch {
		case l.fn && u != useCallee:
			fail("the function '%s' used as a value (it may only be called)", l.name)
		case !l.fn && u == useCallee:
			fail("a call of '%s', a value the check cannot follow", l.name)
		case u == useValue && !w.final:
			w.escapes[l.id] = true
		}
		return
	}
	name := e.Value
	switch {
	case name == "KEYS" || name == "ARGV":
		fail("%s used as a value (only %s[i], #%s, ipairs/pairs(%s) and unpack(%s) can be checked)", name, name, name, name, name)
	case name == "redis":
		fail("redis used as a value")
	case escaping[name]:
		fail("'%s' escapes the check", name)
	case pureFuncs[name] && u == useCallee:
	case pureFuncs[name] || pureLibs[name]:
		fail("the global '%s' used as a value (it may only be called)", name)
	default:
		fail("the global '%s' is not known to the check", name)
	}
}

// attrGet checks a field read x[k].
func (w *walker) attrGet(e *ast.AttrGetExpr) {
	if w.global(e.Object, "KEYS") || w.global(e.Object, "ARGV") {
		w.expr(e.Key, useRead)
		return
	}
	if w.global(e.Object, "redis") {
		name, ok := w.redisField(e)
		switch {
		case !ok:
			fail("a field of redis computed at run time")
		case name == "call" || name == "pcall":
			fail("redis.%s used as a value (aliased, passed or stored)", name)
		case !redisConsts[name]:
			fail("redis.%s used as a value", name)
		}
		return
	}
	if id, ok := e.Object.(*ast.IdentExpr); ok && pureLibs[id.Value] && w.lookup(id.Value) == nil {
		if _, ok := e.Key.(*ast.StringExpr); !ok {
			fail("a field of %s computed at run time", id.Value)
		}
		return
	}
	w.expr(e.Object, useRead)
	w.expr(e.Key, useRead)
}

// call checks a function call: a redis command, a redis helper, a pure
// helper or a local function (which may not call itself).
func (w *walker) call(c *ast.FuncCallExpr) {
	switch {
	case c.Receiver != nil:
		// A method call: only strings have methods (no table of this
		// script can hold a function).
		w.expr(c.Receiver, useRead)
		w.args(c.Args)
		w.stringCall(c.Method, c.Args)
	case w.isReplyExpr(c):
		w.command(c)
	case w.readsWhole(c, "KEYS") || w.readsWhole(c, "ARGV"):
		// unpack(KEYS), table.getn(KEYS): KEYS is read, never kept.
		w.unpacks(c)
	default:
		w.callee(c.Func)
		w.args(c.Args)
		if name := w.stringFunc(c.Func); name != "" && len(c.Args) > 0 {
			w.stringCall(name, c.Args[1:])
		}
	}
}

// callee checks what a non-command call calls.
func (w *walker) callee(f ast.Expr) {
	if name, ok := w.redisField(f); ok {
		switch {
		case name == "breakpoint" || name == "debug":
			fail("redis.%s (the script debugger)", name)
		case !redisHelpers[name]:
			fail("redis.%s is not known to the check", name)
		}
		return
	}
	if a, ok := f.(*ast.AttrGetExpr); ok {
		if id, ok := a.Object.(*ast.IdentExpr); ok && pureLibs[id.Value] && w.lookup(id.Value) == nil {
			if _, ok := a.Key.(*ast.StringExpr); ok {
				return
			}
		}
	}
	id, ok := f.(*ast.IdentExpr)
	if !ok {
		// Whatever the callee reads may be refused on its own first.
		w.expr(f, useRead)
		fail("a call of a value the check cannot follow")
	}
	w.ident(id, useCallee)
	l := w.lookup(id.Value)
	for _, fn := range w.fns {
		if l == fn {
			fail("the recursive function '%s' (unbounded running time)", id.Value)
		}
	}
	if l != nil && l.fn {
		w.callSteps(l)
		if w.maybe == 0 {
			for _, g := range l.discharges {
				w.discharge(g)
			}
		}
	}
}

// args walks a call's arguments: stored by the callee, as far as the check
// knows.
func (w *walker) args(args []ast.Expr) {
	for _, a := range args {
		w.expr(a, useValue)
	}
}

// isUnpackOf: e is unpack(g) or table.unpack(g).
func (w *walker) isUnpackOf(e ast.Expr, g string) bool {
	c, ok := e.(*ast.FuncCallExpr)
	return ok && w.wholeArg(c, g) && (w.global(c.Func, "unpack") || w.tableFunc(c.Func) == "unpack")
}

// readsWhole: c is unpack, table.unpack, table.getn or table.maxn of g
// alone, which read g and keep nothing of it.
func (w *walker) readsWhole(c *ast.FuncCallExpr, g string) bool {
	if !w.wholeArg(c, g) {
		return false
	}
	switch w.tableFunc(c.Func) {
	case "unpack", "getn", "maxn":
		return true
	}
	return w.global(c.Func, "unpack")
}

func (w *walker) wholeArg(c *ast.FuncCallExpr, g string) bool {
	return c.Receiver == nil && len(c.Args) == 1 && w.global(c.Args[0], g)
}

// tableFunc is f of table.f ("" for anything else).
func (w *walker) tableFunc(e ast.Expr) string {
	a, ok := e.(*ast.AttrGetExpr)
	if !ok || !w.global(a.Object, "table") {
		return ""
	}
	if s, ok := a.Key.(*ast.StringExpr); ok {
		return s.Value
	}
	return ""
}

// command checks redis.call/pcall(name, args…).
func (w *walker) command(c *ast.FuncCallExpr) {
	if len(c.Args) == 0 {
		fail("a redis command call without a command")
	}
	lit, ok := c.Args[0].(*ast.StringExpr)
	if !ok {
		w.namedByArg(c)
		return
	}
	name := strings.ToUpper(lit.Value)
	if name == "SELECT" {
		w.selectDB(c, c.Args[1:])
		return
	}
	a, ok := admitted[name]
	if !ok {
		fail("%s", refusedCommand(name))
	}
	w.sawCommand = true
	w.addCost(commandSteps)
	w.info.Writes = w.info.Writes || a.writes
	w.info.Publishes = w.info.Publishes || name == "PUBLISH"
	args := c.Args[1:]
	defer w.expires(name, args)
	if a.keys == keyPairs {
		w.pairArgs(name, args)
		return
	}
	for i, arg := range args {
		isKeyPos := a.keys == keyAll || (a.keys == keyFirst && i == 0)
		if isKeyPos {
			w.keyArg(name, arg, i == len(args)-1)
			continue
		}
		w.expr(arg, useValue)
	}
}

// namedByArg checks a call whose command name is ARGV[n] (Redisson's
// unlock publishes with the command its client passes: PUBLISH, or
// SPUBLISH in sharded mode). Such a call may only publish: its arguments
// are values, and the proxy checks ARGV[n] when the script is run
// (Info.NameArgs).
func (w *walker) namedByArg(c *ast.FuncCallExpr) {
	a, ok := c.Args[0].(*ast.AttrGetExpr)
	n, isArg := 0, ok && w.global(a.Object, "ARGV")
	if isArg {
		n, isArg = w.argvIndex(a)
	}
	if !isArg {
		fail("a command name computed at run time")
	}
	w.sawCommand = true
	w.info.Publishes = true
	if !slices.Contains(w.info.NameArgs, n) {
		w.info.NameArgs = append(w.info.NameArgs, n)
	}
	for _, arg := range c.Args[1:] {
		w.expr(arg, useValue)
	}
}

// ArgNamesOK reports whether the ARGV values that name commands
// (Info.NameArgs) name only a publish; args are the script's ARGV. The
// error names the first that does not, ready to be a RESP error.
func ArgNamesOK(info Info, args []string) error {
	for _, n := range info.NameArgs {
		if n > len(args) {
			return refuse(fmt.Sprintf("ARGV[%d] names a command but is missing", n))
		}
		if name := strings.ToUpper(args[n-1]); !publishNames[name] {
			return refuse(fmt.Sprintf("command '%s' named by ARGV[%d]: only PUBLISH or SPUBLISH may be named by an argument", clip(args[n-1]), n))
		}
	}
	return nil
}

// publishNames are the commands an argument may name.
var publishNames = map[string]bool{"PUBLISH": true, "SPUBLISH": true}

// keyArg checks the argument of a key position: derived from KEYS, or
// unpack(KEYS) as the last argument (every value it adds is a key).
func (w *walker) keyArg(cmd string, e ast.Expr, last bool) {
	if last && w.isUnpackOf(e, "KEYS") {
		w.unpacks(e.(*ast.FuncCallExpr))
		return
	}
	w.expr(e, useRead)
	if w.final && !w.isKey(e) {
		fail("key %s is not from KEYS (command '%s')", describe(e), cmd)
	}
}

// describe names an expression in an error.
func describe(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StringExpr:
		return strconv.Quote(clip(e.Value))
	case *ast.NumberExpr:
		return clip(e.Value)
	case *ast.IdentExpr:
		return "'" + clip(e.Value) + "'"
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok {
			return fmt.Sprintf("%s[…]", id.Value)
		}
	case *ast.StringConcatOpExpr:
		return "built by concatenation"
	case *ast.FuncCallExpr:
		return "returned by a call"
	}
	return "computed at run time"
}

// selectDB checks SELECT: the script's first command, once, outside any
// branch, loop or function, with a db known from the text: a literal, or
// ARGV[n] (with or without tonumber), which the proxy reads per request
// (ScriptDB).
func (w *walker) selectDB(c *ast.FuncCallExpr, args []ast.Expr) {
	switch {
	case w.sawCommand || w.selected:
		fail("SELECT only as the script's first command, and once")
	case w.cond > 0:
		fail("SELECT inside a branch, loop or function (only as the script's first command)")
	case len(args) != 1:
		fail("SELECT takes one db")
	}
	w.selected, w.sawCommand = true, true
	pcall := w.isPcall(c)
	if db, ok := w.literalDB(args[0], pcall); ok {
		w.info.DB = db
		return
	}
	if n, ok := w.argvIndex(args[0]); ok {
		w.info.DBArg, w.info.DBArgPcall = n, pcall
		_, w.info.DBArgNumber = args[0].(*ast.FuncCallExpr)
		w.info.DBLine = callLine(c)
		return
	}
	fail("SELECT of a db computed at run time (only a literal, ARGV[n] or tonumber(ARGV[n]))")
}

// isPcall: c is redis.pcall(…).
func (w *walker) isPcall(c *ast.FuncCallExpr) bool {
	name, _ := w.redisField(c.Func)
	return name == "pcall"
}

// callLine is the line Lua reports for a call of redis.call/pcall: the
// line of its '(', which follows the field's name on its line.
func callLine(c *ast.FuncCallExpr) int {
	if a, ok := c.Func.(*ast.AttrGetExpr); ok && a.Key.Line() > 0 {
		return a.Key.Line()
	}
	return c.Line()
}

// literalDB is the db of a literal SELECT argument, read as Redis reads it
// (a number literal is a Lua number). A SELECT through redis.call that
// would fail is refused; one through redis.pcall leaves the db (no
// switch: ok, db -1).
func (w *walker) literalDB(e ast.Expr, pcall bool) (int, bool) {
	var s string
	var db int
	var msg string
	switch e := e.(type) {
	case *ast.NumberExpr:
		s = e.Value
		db, msg = selectNumber(s, quorum.DBs)
	case *ast.StringExpr:
		s = e.Value
		db, msg = selectString(s, quorum.DBs)
	default:
		return 0, false
	}
	switch {
	case msg == "":
		return db, true
	case pcall:
		return -1, true
	}
	fail("SELECT of db %q (%s; the proxy has dbs 0 to %d)", clip(s), strings.TrimPrefix(msg, "ERR "), quorum.DBs-1)
	return 0, false
}

// argvIndex is n of ARGV[n] or tonumber(ARGV[n]) with a literal n >= 1.
func (w *walker) argvIndex(e ast.Expr) (int, bool) {
	if c, ok := e.(*ast.FuncCallExpr); ok && c.Receiver == nil && len(c.Args) == 1 && w.global(c.Func, "tonumber") {
		e = c.Args[0]
	}
	a, ok := e.(*ast.AttrGetExpr)
	if !ok || !w.global(a.Object, "ARGV") {
		return 0, false
	}
	n, ok := a.Key.(*ast.NumberExpr)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n.Value)
	if err != nil || i < 1 {
		return 0, false
	}
	return i, true
}
