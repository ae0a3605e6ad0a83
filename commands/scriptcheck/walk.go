package scriptcheck

import (
	"fmt"
	"math"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// local is one declared local variable. Declarations are numbered in the
// order the walk meets them, the same in both walks.
type local struct {
	name string
	id   int
	// fn: declared by "local function name" (or "local name = function");
	// it may only be called by name, never read, passed or reassigned, so
	// that the calls between functions form no cycle.
	fn bool
	// Of a function: the steps of one call, the request-dependent loop in
	// it ("" none), and the key groups it gives an expiry to.
	cost       steps
	loop       string
	discharges []string
}

// use is how an expression's value is used where it appears.
type use uint8

const (
	useRead   use = iota // consumed: compared, computed with, indexed
	useValue             // kept: stored, passed, returned (may be aliased)
	useCallee            // called
)

// walker walks a chunk. The first walk (final false) records, per local,
// what is assigned to it; settle turns that into which locals only ever
// hold keys; the final walk checks every command call.
type walker struct {
	final  bool
	scopes []map[string]*local
	ids    int
	// By local id: assigned something not derived from KEYS; the locals
	// that are assigned this one (so share its fate); assigned something
	// other than a redis reply; used where its table may be aliased or
	// changed.
	notKey   []bool
	keyDeps  [][]int
	notReply []bool
	escapes  []bool
	// By local id: the local is not a table of key, value pairs (used
	// otherwise than filled by table.insert pairs and unpacked for MSET);
	// it is unpacked for MSET; the key groups of its keys (expiry.go).
	pairBad    []bool
	pairUsed   []bool
	pairGroups [][]string

	fns        []*local // functions whose bodies the walk is in
	depth      int
	cond       int     // > 0: inside a function, loop, branch or conditional operand
	iterations float64 // product of literal loop iterations around the walk
	// Running time (bound.go): the enclosing loops whose count depends on
	// the request, the last one met, the one a called function has, and
	// the steps so far.
	deps     []string
	lastLoop string
	callDeps string
	cost     steps
	// Expiries (expiry.go): the loops over all of KEYS around the walk;
	// > 0: the walk is where the script may not pass (a branch, a loop
	// that may not run); the key groups written without expiry so far;
	// in a function's body, the groups it gives an expiry to.
	keysLoops  []keysLoop
	maybe      int
	pending    map[string]string
	collect    *[]string
	sawCommand bool
	selected   bool
	info       Info
	// concatVisits counts the syntax nodes concatOperands reads, in all
	// walks: the work of the concatenation rules, linear in the body's
	// size (tests measure it).
	concatVisits int
}

func newWalker() *walker {
	w := &walker{}
	w.reset()
	return w
}

// reset readies the walker for another walk of the same chunk, keeping
// what the walks before learnt about locals.
func (w *walker) reset() {
	w.scopes, w.ids, w.fns = nil, 0, nil
	w.depth, w.cond, w.iterations = 0, 0, 1
	w.deps, w.lastLoop, w.callDeps, w.cost = nil, "", "", steps{}
	w.keysLoops, w.maybe, w.pending, w.collect = nil, 0, map[string]string{}, nil
	w.sawCommand, w.selected = false, false
	w.info = Info{DB: -1}
}

func fail(format string, args ...any) { panic(refusal{fmt.Sprintf(format, args...)}) }

func (w *walker) enter() {
	w.depth++
	if w.depth > MaxDepth {
		fail("the script nests deeper than %d levels", MaxDepth)
	}
}

func (w *walker) leave() { w.depth-- }

// settle marks every local that is assigned a non-key local as non-key
// too, until nothing changes (each local is marked at most once).
func (w *walker) settle() {
	var work []int
	for id, bad := range w.notKey {
		if bad {
			work = append(work, id)
		}
	}
	for len(work) > 0 {
		id := work[len(work)-1]
		work = work[:len(work)-1]
		for _, dep := range w.keyDeps[id] {
			if !w.notKey[dep] {
				w.notKey[dep] = true
				work = append(work, dep)
			}
		}
	}
}

// reserved names may not be declared as locals: the check reads them as
// the globals Redis gives a script.
var reserved = map[string]bool{"KEYS": true, "ARGV": true, "redis": true}

func (w *walker) declare(name string, fn bool) *local {
	if reserved[name] {
		fail("a local named '%s' shadows the global", name)
	}
	l := &local{name: name, id: w.ids, fn: fn}
	w.ids++
	if !w.final {
		w.notKey = append(w.notKey, false)
		w.keyDeps = append(w.keyDeps, nil)
		w.notReply = append(w.notReply, false)
		w.escapes = append(w.escapes, false)
		w.pairBad = append(w.pairBad, false)
		w.pairUsed = append(w.pairUsed, false)
		w.pairGroups = append(w.pairGroups, nil)
	}
	w.scopes[len(w.scopes)-1][name] = l
	return l
}

func (w *walker) push() { w.scopes = append(w.scopes, map[string]*local{}) }
func (w *walker) pop()  { w.scopes = w.scopes[:len(w.scopes)-1] }

// lookup is the local that name refers to here, or nil for a global.
func (w *walker) lookup(name string) *local {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if l, ok := w.scopes[i][name]; ok {
			return l
		}
	}
	return nil
}

// global reports whether e names the global g (not a local shadowing it).
func (w *walker) global(e ast.Expr, g string) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && id.Value == g && w.lookup(g) == nil
}

// assigned records that e (nil: a value the walk cannot name, such as an
// extra result of a call) is assigned to l.
func (w *walker) assigned(l *local, e ast.Expr) {
	if w.final {
		return
	}
	if !w.isReplyExpr(e) {
		w.notReply[l.id] = true
	}
	if !isEmptyTable(e) {
		w.pairBad[l.id] = true
	}
	switch {
	case e == nil:
		w.notKey[l.id] = true
	case w.isKeysIndex(e):
	case isNil(e):
	default:
		if id, ok := e.(*ast.IdentExpr); ok {
			if src := w.lookup(id.Value); src != nil && !src.fn {
				w.keyDeps[src.id] = append(w.keyDeps[src.id], l.id)
				return
			}
		}
		w.notKey[l.id] = true
	}
}

func isNil(e ast.Expr) bool { _, ok := e.(*ast.NilExpr); return ok }

// isFalsy: e is the literal false or nil.
func isFalsy(e ast.Expr) bool {
	switch e.(type) {
	case *ast.FalseExpr, *ast.NilExpr:
		return true
	}
	return false
}

// isTruthy: e is a literal other than false and nil.
func isTruthy(e ast.Expr) bool {
	switch e.(type) {
	case *ast.TrueExpr, *ast.NumberExpr, *ast.StringExpr:
		return true
	}
	return false
}

// isKeysIndex: e is KEYS[expr].
func (w *walker) isKeysIndex(e ast.Expr) bool {
	a, ok := e.(*ast.AttrGetExpr)
	return ok && w.global(a.Object, "KEYS")
}

// isKey: e's value is a key from KEYS (or nil, which no command takes as
// a key). Only the final walk knows.
func (w *walker) isKey(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.NilExpr:
		return true
	case *ast.IdentExpr:
		l := w.lookup(e.Value)
		return l != nil && !l.fn && !w.notKey[l.id]
	}
	return w.isKeysIndex(e)
}

// isReplyExpr: e is a redis.call or redis.pcall, whose reply is a fresh
// value (nil: a local declared without one).
func (w *walker) isReplyExpr(e ast.Expr) bool {
	if e == nil {
		return false
	}
	if isNil(e) {
		return true
	}
	c, ok := e.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil {
		return false
	}
	name, ok := w.redisField(c.Func)
	return ok && (name == "call" || name == "pcall")
}

// redisField is X of e = redis.X (or redis["X"]).
func (w *walker) redisField(e ast.Expr) (string, bool) {
	a, ok := e.(*ast.AttrGetExpr)
	if !ok || !w.global(a.Object, "redis") {
		return "", false
	}
	s, ok := a.Key.(*ast.StringExpr)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// block walks stmts in a scope of their own.
// A table.insert(t, x) followed by table.insert(t, y) is walked as a
// pair (expiry.go).
func (w *walker) block(stmts []ast.Stmt) {
	w.push()
	for i := 0; i < len(stmts); i++ {
		t, x := w.tableInsert(stmts[i])
		if t == nil {
			w.stmt(stmts[i])
			continue
		}
		var y ast.Expr
		if i+1 < len(stmts) {
			if t2, v := w.tableInsert(stmts[i+1]); t2 == t {
				y, i = v, i+1
			}
		}
		w.pairInsert(t, x, y)
	}
	w.pop()
}

func (w *walker) stmt(s ast.Stmt) {
	w.enter()
	defer w.leave()
	w.addCost(1)
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.assign(s)
	case *ast.LocalAssignStmt:
		w.localAssign(s)
	case *ast.FuncCallStmt:
		w.expr(s.Expr, useRead)
	case *ast.DoBlockStmt:
		w.block(s.Stmts)
	case *ast.WhileStmt:
		// Trivially bounded: while false (never runs).
		if !isFalsy(s.Condition) {
			fail("a while loop (unbounded running time)")
		}
		w.loopBody(nil, nil, s.Stmts, false)
	case *ast.RepeatStmt:
		// Trivially bounded: repeat … until true (runs once).
		if !isTruthy(s.Condition) {
			fail("a repeat loop (unbounded running time)")
		}
		w.loopBody(nil, nil, s.Stmts, false)
	case *ast.GotoStmt:
		fail("goto (unbounded running time)")
	case *ast.LabelStmt, *ast.BreakStmt:
	case *ast.IfStmt:
		w.expr(s.Condition, useRead)
		w.cond++
		w.maybe++
		w.block(s.Then)
		w.block(s.Else)
		w.maybe--
		w.cond--
	case *ast.NumberForStmt:
		w.numberFor(s)
	case *ast.GenericForStmt:
		w.genericFor(s)
	case *ast.FuncDefStmt:
		fail("a function stored in a global or a table field (only local functions called by name can be checked)")
	case *ast.ReturnStmt:
		for _, e := range s.Exprs {
			w.expr(e, useValue)
		}
		w.checkExpired()
	default:
		fail("a statement the check does not know")
	}
}

func (w *walker) assign(s *ast.AssignStmt) {
	for i, lhs := range s.Lhs {
		switch t := lhs.(type) {
		case *ast.IdentExpr:
			l := w.lookup(t.Value)
			if l == nil {
				fail("an assignment to the global '%s'", t.Value)
			}
			if l.fn {
				fail("an assignment to the function '%s'", t.Value)
			}
			w.noGrowth(t.Value, valueAt(s.Rhs, i))
			w.assigned(l, valueAt(s.Rhs, i))
		case *ast.AttrGetExpr:
			w.assignField(t)
		default:
			fail("an assignment the check does not know")
		}
	}
	for _, e := range s.Rhs {
		w.expr(e, useValue)
	}
}

// valueAt is the expression assigned to the i-th name of an assignment:
// nil where it is an extra result of a call (or of ...), NilExpr where
// nothing is assigned.
func valueAt(exprs []ast.Expr, i int) ast.Expr {
	if i < len(exprs) {
		return exprs[i]
	}
	if n := len(exprs); n > 0 {
		switch exprs[n-1].(type) {
		case *ast.FuncCallExpr, *ast.Comma3Expr:
			return nil
		}
	}
	return &ast.NilExpr{}
}

// assignField checks t[k] = v: allowed on a local's table only (a global
// such as KEYS, ARGV, redis or string is never changed).
func (w *walker) assignField(t *ast.AttrGetExpr) {
	root := t.Object
	for {
		a, ok := root.(*ast.AttrGetExpr)
		if !ok {
			break
		}
		w.expr(a.Key, useRead)
		root = a.Object
	}
	w.expr(t.Key, useRead)
	id, ok := root.(*ast.IdentExpr)
	if !ok {
		fail("an assignment to a field of a value the check cannot follow")
	}
	l := w.lookup(id.Value)
	if l == nil {
		fail("an assignment to a field of the global '%s'", id.Value)
	}
	if l.fn {
		fail("an assignment to a field of the function '%s'", id.Value)
	}
	if !w.final {
		w.escapes[l.id] = true
		w.pairBad[l.id] = true
	}
}

func (w *walker) localAssign(s *ast.LocalAssignStmt) {
	if len(s.Names) == 1 && len(s.Exprs) == 1 {
		if f, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
			w.localFunction(s.Names[0], f)
			return
		}
	}
	for _, name := range s.Names {
		if reserved[name] {
			fail("a local named '%s' shadows the global", name)
		}
	}
	for _, e := range s.Exprs {
		w.expr(e, useValue)
	}
	for i, name := range s.Names {
		w.assigned(w.declare(name, false), valueAt(s.Exprs, i))
	}
}

// localFunction walks "local function name": name is in scope in its own
// body (so a call of itself there is found as recursion).
func (w *walker) localFunction(name string, f *ast.FunctionExpr) {
	l := w.declare(name, true)
	w.fns = append(w.fns, l)
	w.cond++
	savedLoops, savedMaybe, savedCollect := w.keysLoops, w.maybe, w.collect
	w.keysLoops, w.maybe, w.collect = nil, 0, &l.discharges
	w.push()
	if f.ParList != nil {
		for _, p := range f.ParList.Names {
			w.assigned(w.declare(p, false), nil)
		}
	}
	w.functionSteps(l, func() { w.block(f.Stmts) })
	w.pop()
	w.keysLoops, w.maybe, w.collect = savedLoops, savedMaybe, savedCollect
	w.cond--
	w.fns = w.fns[:len(w.fns)-1]
}

func (w *walker) numberFor(s *ast.NumberForStmt) {
	init, okInit := w.bound(s.Init)
	limit, okLimit := w.bound(s.Limit)
	step, okStep := 1.0, true
	if s.Step != nil {
		step, okStep = literal(s.Step)
		if !okStep || step == 0 {
			fail("a numeric for loop whose step is not a non-zero literal (unbounded running time)")
		}
	}
	if !okInit || !okLimit {
		// Over the whole of KEYS (1 to #KEYS, step 1): KEYS[i] is every key.
		keys := okInit && init == 1 && step == 1 && w.isLenOf(s.Limit, "KEYS")
		over := "#ARGV"
		if w.isLenOf(s.Init, "KEYS") || w.isLenOf(s.Limit, "KEYS") {
			over = "#KEYS"
		}
		w.dependentLoop(over, func() { w.loopBody([]string{s.Name}, nil, s.Stmts, keys) })
		return
	}
	n := math.Max(0, math.Floor((limit-init)/step)+1)
	saved := w.iterations
	w.iterations *= math.Max(n, 1)
	if w.iterations > maxLiteralIterations {
		fail("numeric for loops of more than %d iterations (unbounded running time)", maxLiteralIterations)
	}
	w.loopBody([]string{s.Name}, nil, s.Stmts, false)
	w.iterations = saved
}

// isLenOf: e is #g of the global g.
func (w *walker) isLenOf(e ast.Expr, g string) bool {
	u, ok := e.(*ast.UnaryLenOpExpr)
	return ok && w.global(u.Expr, g)
}

// bound is a numeric for loop's bound: a literal (ok) or #KEYS/#ARGV
// (bounded by the request; not ok, as its value is unknown). Anything
// else is refused.
func (w *walker) bound(e ast.Expr) (float64, bool) {
	if v, ok := literal(e); ok {
		return v, true
	}
	if u, ok := e.(*ast.UnaryLenOpExpr); ok && (w.global(u.Expr, "KEYS") || w.global(u.Expr, "ARGV")) {
		return 0, false
	}
	fail("a numeric for loop whose bounds are not literals or #KEYS/#ARGV (unbounded running time)")
	return 0, false
}

// literal is the value of a number literal (or its negation).
func literal(e ast.Expr) (float64, bool) {
	neg := false
	if u, ok := e.(*ast.UnaryMinusOpExpr); ok {
		e, neg = u.Expr, true
	}
	n, ok := e.(*ast.NumberExpr)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return 0, false
		}
		v = float64(i)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// genericFor admits "for i, v in ipairs(X)" and pairs(X), where X is KEYS,
// ARGV or a local holding a redis reply that nothing changes: their
// length is fixed by the request or by the reply.
func (w *walker) genericFor(s *ast.GenericForStmt) {
	over := w.iterated(s.Exprs)
	values := []ast.Expr{nil, nil}
	if over == "KEYS" {
		values[1] = &ast.AttrGetExpr{Object: &ast.IdentExpr{Value: "KEYS"}, Key: &ast.NilExpr{}}
	}
	desc := over
	if over != "KEYS" && over != "ARGV" {
		desc = "the reply '" + clip(over) + "'"
	}
	w.dependentLoop(desc, func() { w.loopBody(s.Names, values, s.Stmts, over == "KEYS") })
}

// iterated is what a generic for iterates over ("KEYS", "ARGV" or a
// reply's local name); anything else is refused.
func (w *walker) iterated(exprs []ast.Expr) string {
	const msg = "a for loop over %s (unbounded running time: only ipairs/pairs of KEYS, ARGV or a redis reply are bounded)"
	if len(exprs) != 1 {
		fail(msg, "an iterator the check cannot follow")
	}
	c, ok := exprs[0].(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 1 || !(w.global(c.Func, "ipairs") || w.global(c.Func, "pairs")) {
		fail(msg, "an iterator the check cannot follow")
	}
	arg := c.Args[0]
	for _, g := range []string{"KEYS", "ARGV"} {
		if w.global(arg, g) {
			return g
		}
	}
	id, ok := arg.(*ast.IdentExpr)
	if !ok {
		fail(msg, "a computed table")
	}
	l := w.lookup(id.Value)
	if l == nil || l.fn {
		fail(msg, "'"+id.Value+"'")
	}
	if w.final && (w.notReply[l.id] || w.escapes[l.id]) {
		fail(msg, "'"+id.Value+"', a table that is not an unchanged redis reply")
	}
	return id.Value
}

// loopBody walks a loop's body with its control variables declared;
// values[i] is what the i-th is assigned (nil: not a key). keys: the loop
// runs over all of KEYS (its first variable the index, its second the
// key); any other loop may not run at all.
func (w *walker) loopBody(names []string, values []ast.Expr, body []ast.Stmt, keys bool) {
	w.cond++
	w.addCost(1) // each iteration is a step, whatever its body
	w.push()
	var vars []*local
	for i, name := range names {
		var v ast.Expr
		if i < len(values) {
			v = values[i]
		}
		l := w.declare(name, false)
		w.assigned(l, v)
		vars = append(vars, l)
	}
	if keys {
		kl := keysLoop{index: vars[0]}
		if len(vars) > 1 {
			kl.value = vars[1]
		}
		w.keysLoops = append(w.keysLoops, kl)
		w.block(body)
		w.keysLoops = w.keysLoops[:len(w.keysLoops)-1]
	} else {
		w.maybe++
		w.block(body)
		w.maybe--
	}
	w.pop()
	w.cond--
}

// noGrowth refuses a string that grows without a bound the request sets:
// name assigned a concatenation of itself inside a loop (its size grows
// with the iterations, up to the step budget's millions), which a
// literal loop does not bound by the request's size.
func (w *walker) noGrowth(name string, v ast.Expr) {
	if w.iterations <= 1 && len(w.deps) == 0 {
		return
	}
	for _, op := range concatOperands(v, 0, &w.concatVisits) {
		if id, ok := op.(*ast.IdentExpr); ok && id.Value == name {
			fail("a string built up across a loop's iterations ('%s' = %s .. …: unbounded memory; concatenate KEYS and ARGV directly)", name, name)
		}
	}
}
