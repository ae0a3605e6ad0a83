package scriptcheck

import "github.com/yuin/gopher-lua/ast"

// A chain of concatenations is one expression of linked
// StringConcatOpExprs: a .. b .. c, parts in parentheses included
// ((a .. b) .. c). Its operands are what its links join.
//
// A name twice among them (s .. s) doubles a string each time the
// expression runs: a few lines make gigabytes. And the interpreter joins
// the operands of a chain in one step that no deadline interrupts: n
// aliases of one large string (local t = s, which the check does not
// follow) make a string n times its size at once. So a chain may have at
// most maxConcat operands, as string.rep a count of at most maxRep: a
// concatenation multiplies a string's size no more than string.rep may.
const maxConcat = maxRep

// concat walks e, a link of a chain; top: e is the chain's top (no
// operand of another link). The chain's operands are checked once, at
// its top, not again at each link below it: that made the check's cost
// grow with the cube of a long chain.
func (w *walker) concat(e *ast.StringConcatOpExpr, top bool) {
	if top {
		w.concatChain(e)
	}
	w.concatOperand(e.Lhs)
	w.concatOperand(e.Rhs)
}

// concatOperand walks an operand of a link: a link in turn (one level
// deeper, as expr walks any expression), or anything else as read.
func (w *walker) concatOperand(e ast.Expr) {
	link, ok := e.(*ast.StringConcatOpExpr)
	if !ok {
		w.expr(e, useRead)
		return
	}
	w.enter()
	defer w.leave()
	w.concat(link, false)
}

// concatChain checks the operands of the chain topped by e: at most
// maxConcat of them, and no name twice (the first name, left to right,
// that comes again is the one refused).
func (w *walker) concatChain(e *ast.StringConcatOpExpr) {
	ops := concatOperands(e, maxConcat+1, &w.concatVisits)
	if len(ops) > maxConcat {
		fail("a concatenation of more than %d operands (a .. b .. …, parts in parentheses included: each may alias one large string, all joined in one step; unbounded memory)", maxConcat)
	}
	count := make(map[string]int, len(ops))
	for _, op := range ops {
		if id, ok := op.(*ast.IdentExpr); ok {
			count[id.Value]++
		}
	}
	for _, op := range ops {
		if id, ok := op.(*ast.IdentExpr); ok && count[id.Value] > 1 {
			n := id.Value
			fail("a string concatenated with itself ('%s' .. '%s': its size doubles each time; unbounded memory)", n, n)
		}
	}
}

// concatOperands lists the operands of the chain e left to right, with
// repeats (e alone when it is no concatenation; none when nil). It stops
// once it has limit of them (limit 0: no limit). visits counts the nodes
// it reads: each node of the chain at most once, without recursion, so a
// chain of any shape and length costs its size.
func concatOperands(e ast.Expr, limit int, visits *int) []ast.Expr {
	if e == nil {
		return nil
	}
	var ops []ast.Expr
	stack := []ast.Expr{e}
	for len(stack) > 0 && (limit == 0 || len(ops) < limit) {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		*visits++
		if link, ok := e.(*ast.StringConcatOpExpr); ok {
			stack = append(stack, link.Rhs, link.Lhs)
			continue
		}
		ops = append(ops, e)
	}
	return ops
}
