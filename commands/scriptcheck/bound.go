package scriptcheck

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// A replicated script runs on every backend at once, so its running time
// must be bounded by its request, which the proxy caps before it sends a
// script: at most MaxKeys keys and MaxArgs arguments, MaxArgBytes bytes in
// all (ArgsOK).
//
// The check counts steps: each statement is one, each redis command
// commandSteps, each call of a local function what its body costs. A loop
// with literal bounds multiplies its body's steps by its iterations; a
// loop whose count depends on the request (over #KEYS, #ARGV, ipairs of
// KEYS, ARGV or a redis reply) multiplies them by N, its length, and at
// most one such loop level may enclose any statement, through calls too:
// a script's steps are a + b·N. Admitted: a + b·MaxArgs <= maxSteps.
const (
	// MaxKeys, MaxArgs and MaxArgBytes cap a replicated script's request.
	MaxKeys     = 1024
	MaxArgs     = 1024
	MaxArgBytes = 1 << 20
	// maxSteps bounds the steps of a script for the largest request: a
	// few milliseconds of a backend's time.
	maxSteps = 1 << 22
	// commandSteps is what a redis command costs, in statements.
	commandSteps = 10
)

// steps is a + b·N.
type steps [2]float64

// addCost adds n steps of the walk's place (inside its loops).
func (w *walker) addCost(n float64) {
	w.addSteps(steps{n, 0})
}

// addSteps adds s, the steps of one run of something, at the walk's
// place: times the literal iterations around it, times N where a loop
// over the request encloses it.
func (w *walker) addSteps(s steps) {
	if len(w.deps) > 0 && s[1] > 0 {
		fail("a loop over %s nested, through a call, in a loop over %s (running time grows with the square of the request; at most one loop level may depend on it)", w.callDeps, w.deps[len(w.deps)-1])
	}
	m := w.iterations
	if len(w.deps) > 0 {
		w.cost[1] += m * s[0]
	} else {
		w.cost[0] += m * s[0]
		w.cost[1] += m * s[1]
	}
	if total := w.cost[0] + w.cost[1]*MaxArgs; !(total <= maxSteps) {
		fail("loops and calls of more than %d steps for %d arguments (unbounded running time)", maxSteps, MaxArgs)
	}
}

// dependentLoop walks body as a loop whose count depends on the request
// (over is what it counts, for errors).
func (w *walker) dependentLoop(over string, body func()) {
	if len(w.deps) > 0 {
		fail("a loop over %s nested in a loop over %s (running time grows with the square of the request; at most one loop level may depend on it)", over, w.deps[len(w.deps)-1])
	}
	w.deps, w.lastLoop = append(w.deps, over), over
	body()
	w.deps = w.deps[:len(w.deps)-1]
}

// functionSteps walks a local function's body apart: what it costs per
// call, and the request-dependent loop it has, if any.
func (w *walker) functionSteps(l *local, body func()) {
	savedCost, savedIter, savedDeps := w.cost, w.iterations, w.deps
	w.cost, w.iterations, w.deps, w.lastLoop = steps{}, 1, nil, ""
	body()
	l.cost, l.loop = w.cost, w.lastLoop
	w.cost, w.iterations, w.deps = savedCost, savedIter, savedDeps
}

// callSteps adds the steps of a call of the local function l.
func (w *walker) callSteps(l *local) {
	w.callDeps = l.loop
	w.addSteps(l.cost)
	w.callDeps = ""
}

// ArgsOK checks a replicated script's request against the caps the check
// bounds its running time by (MaxKeys, MaxArgs, MaxArgBytes). The error
// is ready to be a RESP error.
func ArgsOK(keys, args []string) error {
	size := 0
	for _, s := range keys {
		size += len(s)
	}
	for _, s := range args {
		size += len(s)
	}
	switch {
	case len(keys) > MaxKeys:
		return refuse(fmt.Sprintf("%d keys (at most %d)", len(keys), MaxKeys))
	case len(args) > MaxArgs:
		return refuse(fmt.Sprintf("%d arguments (at most %d)", len(args), MaxArgs))
	case size > MaxArgBytes:
		return refuse(fmt.Sprintf("keys and arguments of %d bytes (at most %d MiB in all)", size, MaxArgBytes>>20))
	}
	return nil
}

// unpacks counts unpack(KEYS) or unpack(ARGV) (c) as the loop over the
// request it is: it may not be inside another.
func (w *walker) unpacks(c *ast.FuncCallExpr) {
	g := "KEYS"
	if w.global(c.Args[0], "ARGV") {
		g = "ARGV"
	}
	if !w.isUnpackOf(c, g) {
		return // table.getn, table.maxn: a length
	}
	if len(w.deps) > 0 {
		fail("unpack(%s) in a loop over %s (running time grows with the square of the request; at most one loop level may depend on it)", g, w.deps[len(w.deps)-1])
	}
	w.addSteps(steps{0, 1})
}
