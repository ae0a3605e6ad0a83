package scriptcheck

import (
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// Lua's pattern matcher backtracks: string.find(s, 'a*a*a*a*b') takes
// time exponential in the quantifiers, and even one quantifier makes an
// unanchored search quadratic in s. A pattern function (find, match,
// gmatch, gsub) is admitted with a literal pattern free of quantifiers
// (* + - ?) and of %b, which matches in time linear in its subject; find
// also with plain=true (no pattern at all).
var patternFuncs = map[string]bool{"find": true, "match": true, "gmatch": true, "gsub": true}

// maxRep bounds the literal count of string.rep (its result's size is the
// count times its argument's) and the length of gsub's literal
// replacement (each match may become it).
const maxRep = 64

// isShortLiteral: e is a string or number literal of at most maxRep bytes.
func isShortLiteral(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StringExpr:
		return len(e.Value) <= maxRep
	case *ast.NumberExpr:
		return len(e.Value) <= maxRep
	}
	return false
}

// stringCall checks a call of the string function name; args are its
// arguments after the subject (a method call's receiver, or the first
// argument).
func (w *walker) stringCall(name string, args []ast.Expr) {
	switch {
	case patternFuncs[name]:
		if name == "find" && len(args) >= 3 {
			if _, ok := args[2].(*ast.TrueExpr); ok {
				return
			}
		}
		if len(args) == 0 {
			return // Lua's own error, at once
		}
		p, ok := args[0].(*ast.StringExpr)
		if !ok {
			fail("string.%s with a pattern that is not a literal (a pattern from the request may backtrack without bound; use a literal pattern, or string.find with plain=true)", name)
		}
		if c, bad := backtracks(p.Value); bad {
			fail("string.%s with the pattern %s, whose %s backtracks (unbounded running time; only literal patterns without * + - ? or %%b are bounded)", name, strconv.Quote(clip(p.Value)), c)
		}
		if name == "gsub" && len(args) >= 2 && !isShortLiteral(args[1]) {
			fail("string.gsub with a replacement that is not a literal of at most %d bytes (every match may be replaced by it: its result's size is unbounded)", maxRep)
		}
	case name == "rep":
		if len(args) == 0 {
			return
		}
		n, ok := literal(args[0])
		if !ok || n > maxRep {
			fail("string.rep with a count that is not a literal of at most %d (its result's size is unbounded)", maxRep)
		}
	}
}

// backtracks reports the first construct of a Lua pattern that makes its
// matcher backtrack: a quantifier or %b.
func backtracks(p string) (string, bool) {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			if i+1 < len(p) && p[i+1] == 'b' {
				return "%b", true
			}
			i++
		case '[':
			i = setEnd(p, i)
		case '*', '+', '-', '?':
			return "'" + p[i:i+1] + "'", true
		}
	}
	return "", false
}

// setEnd is the index of the ']' that closes the set opened at p[i] (the
// end of p where none does: Lua refuses the pattern).
func setEnd(p string, i int) int {
	i++
	if i < len(p) && p[i] == '^' {
		i++
	}
	// A ']' first in the set is a member.
	for first := true; i < len(p); i, first = i+1, false {
		switch {
		case p[i] == '%':
			i++
		case p[i] == ']' && !first:
			return i
		}
	}
	return len(p)
}

// stringFunc is name of string.name (or string["name"]), "" for anything
// else.
func (w *walker) stringFunc(e ast.Expr) string {
	a, ok := e.(*ast.AttrGetExpr)
	if !ok || !w.global(a.Object, "string") {
		return ""
	}
	if s, ok := a.Key.(*ast.StringExpr); ok {
		return s.Value
	}
	return ""
}
