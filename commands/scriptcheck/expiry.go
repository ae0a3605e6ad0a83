package scriptcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// MSET and MSETNX write keys without an expiry. A script may call them
// when it gives every key they write an expiry afterwards, on its main
// path: an expiry command (PEXPIRE, EXPIRE, PEXPIREAT, EXPIREAT, SET with
// PX/EX/PXAT/EXAT, SETEX, PSETEX) on each key, outside any branch, after
// the write, at the top level or in a local function called there. A key
// that a path returning early leaves without expiry gets the session ttl
// from the proxy when the script has run, as a SET without expiry does.
//
// Keys are compared by group: "KEYS[n]" for a literal n, "local:<id>" for
// a local holding a key, and allKeys for every key of KEYS (unpack(KEYS),
// or the variable of a loop over all of KEYS), which covers every group.
const allKeys = "KEYS"

// keysLoop is an enclosing loop over all of KEYS: its index and value
// variables (nil where it has none).
type keysLoop struct{ index, value *local }

// expiryCommands give their key an expiry; SET does when it has one of
// setExpiryOptions.
var (
	expiryCommands   = map[string]bool{"PEXPIRE": true, "EXPIRE": true, "PEXPIREAT": true, "EXPIREAT": true, "SETEX": true, "PSETEX": true}
	setExpiryOptions = map[string]bool{"PX": true, "EX": true, "PXAT": true, "EXAT": true}
)

// keyGroup is the group of the key e names (see allKeys).
func (w *walker) keyGroup(e ast.Expr) string {
	if w.isUnpackOf(e, "KEYS") {
		return allKeys
	}
	switch e := e.(type) {
	case *ast.IdentExpr:
		l := w.lookup(e.Value)
		if l == nil {
			return "?"
		}
		for _, kl := range w.keysLoops {
			if kl.value == l {
				return allKeys
			}
		}
		return fmt.Sprintf("local:%d", l.id)
	case *ast.AttrGetExpr:
		if !w.global(e.Object, "KEYS") {
			return "?"
		}
		switch k := e.Key.(type) {
		case *ast.NumberExpr:
			return "KEYS[" + k.Value + "]"
		case *ast.IdentExpr:
			l := w.lookup(k.Value)
			for _, kl := range w.keysLoops {
				if l != nil && kl.index == l {
					return allKeys
				}
			}
		}
	}
	return "?"
}

// expires records that command name, called with args, may give its key
// an expiry.
func (w *walker) expires(name string, args []ast.Expr) {
	if len(args) == 0 || w.maybe > 0 {
		return
	}
	if name == "SET" && !slices.ContainsFunc(args[1:], isExpiryOption) {
		return
	}
	if name != "SET" && !expiryCommands[name] {
		return
	}
	w.discharge(w.keyGroup(args[0]))
}

func isExpiryOption(e ast.Expr) bool {
	s, ok := e.(*ast.StringExpr)
	return ok && setExpiryOptions[strings.ToUpper(s.Value)]
}

// discharge records that the keys of group g get an expiry here: in a
// function's body, for its callers; else for the writes before.
func (w *walker) discharge(g string) {
	if w.collect != nil {
		*w.collect = append(*w.collect, g)
		return
	}
	if g == allKeys {
		clear(w.pending)
		return
	}
	delete(w.pending, g)
}

// leavesUnexpired records the groups of keys that an MSET or MSETNX
// writes without an expiry.
func (w *walker) leavesUnexpired(cmd string, groups []string) {
	if !w.final {
		return
	}
	for _, g := range groups {
		w.pending[g] = cmd
	}
}

// checkExpired refuses a script that returns (at its end, or by a return
// on its main path) while keys an MSET or MSETNX wrote have no expiry.
func (w *walker) checkExpired() {
	if !w.final || w.collect != nil || w.maybe > 0 {
		return
	}
	for _, cmd := range w.pending {
		fail("command '%s' leaves keys without expiry (give each key it writes an expiry with PEXPIRE on the script's main path before it returns)", cmd)
	}
}

// pairArgs checks the arguments of MSET or MSETNX: key, value pairs with
// keys from KEYS, or unpack(t) of a local table t built of such pairs.
func (w *walker) pairArgs(name string, args []ast.Expr) {
	if len(args) == 1 {
		if l := w.unpackedLocal(args[0]); l != nil {
			w.pairTableArg(name, l)
			return
		}
	}
	var groups []string
	for i, arg := range args {
		if i%2 == 1 {
			w.expr(arg, useValue)
			continue
		}
		w.keyArg(name, arg, i == len(args)-1)
		groups = append(groups, w.keyGroup(arg))
	}
	w.leavesUnexpired(name, groups)
}

// unpackedLocal is t of unpack(t) or table.unpack(t) for a local t.
func (w *walker) unpackedLocal(e ast.Expr) *local {
	c, ok := e.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 1 || !(w.global(c.Func, "unpack") || w.tableFunc(c.Func) == "unpack") {
		return nil
	}
	id, ok := c.Args[0].(*ast.IdentExpr)
	if !ok {
		return nil
	}
	if l := w.lookup(id.Value); l != nil && !l.fn {
		return l
	}
	return nil
}

func (w *walker) pairTableArg(name string, l *local) {
	if !w.final {
		w.pairUsed[l.id] = true
		return
	}
	if w.pairBad[l.id] {
		fail("the table '%s' given to %s is not built of key, value pairs (only local t = {} filled by table.insert(t, key) then table.insert(t, value), and unpack(t) given to MSET or MSETNX)", clip(l.name), name)
	}
	w.leavesUnexpired(name, w.pairGroups[l.id])
}

// tableInsert is t and x of the statement table.insert(t, x) on a local
// table t.
func (w *walker) tableInsert(s ast.Stmt) (*local, ast.Expr) {
	fs, ok := s.(*ast.FuncCallStmt)
	if !ok {
		return nil, nil
	}
	c, ok := fs.Expr.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 2 || w.tableFunc(c.Func) != "insert" {
		return nil, nil
	}
	id, ok := c.Args[0].(*ast.IdentExpr)
	if !ok {
		return nil, nil
	}
	if l := w.lookup(id.Value); l != nil && !l.fn {
		return l, c.Args[1]
	}
	return nil, nil
}

// pairInsert walks table.insert(t, key) followed by table.insert(t,
// value) (value nil: the insert has no partner, so t is no pair table).
func (w *walker) pairInsert(t *local, key, value ast.Expr) {
	w.enter()
	defer w.leave()
	w.addCost(2)
	w.expr(key, useValue)
	if value != nil {
		w.expr(value, useValue)
	}
	if !w.final {
		w.escapes[t.id] = true // the table changes
		if value == nil {
			w.pairBad[t.id] = true
		}
		w.pairGroups[t.id] = append(w.pairGroups[t.id], w.keyGroup(key))
		return
	}
	if !w.pairBad[t.id] && w.pairUsed[t.id] && !w.isKey(key) {
		fail("key %s is not from KEYS (a key of the table '%s' given to MSET or MSETNX)", describe(key), clip(t.name))
	}
}

func isEmptyTable(e ast.Expr) bool {
	t, ok := e.(*ast.TableExpr)
	return ok && len(t.Fields) == 0
}
