package scriptcheck

import (
	"fmt"
	"strings"
	"testing"
)

// locals declares n locals a1…an and returns their names.
func locals(n int) (string, []string) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("a%d", i+1)
	}
	return "local " + strings.Join(names, ", ") + "\n", names
}

// Chain shapes: a1 .. (a2 .. (a3 …)) as Lua parses a .. b .. c; the
// same nested to the left with parentheses; a balanced tree.
func rightChain(ops []string) string { return strings.Join(ops, " .. ") }

func leftChain(ops []string) string {
	s := ops[0]
	for _, op := range ops[1:] {
		s = "(" + s + ") .. " + op
	}
	return s
}

func balancedChain(ops []string) string {
	if len(ops) == 1 {
		return ops[0]
	}
	m := len(ops) / 2
	return "(" + balancedChain(ops[:m]) + ") .. (" + balancedChain(ops[m:]) + ")"
}

var chainShapes = map[string]func([]string) string{
	"right": rightChain, "left": leftChain, "balanced": balancedChain,
}

// concatWork checks src as Check does and returns the syntax nodes the
// concatenation rules read, in both walks.
func concatWork(t *testing.T, src string) (int, error) {
	t.Helper()
	chunk, err := parseScript(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	w := newWalker()
	_, err = w.analyse(chunk)
	return w.concatVisits, err
}

// checkLinear: the work for size 2n is at most about twice that for n,
// and never more than the body's bytes.
func checkLinear(t *testing.T, name string, script func(n int) string, n int, want string) {
	t.Helper()
	var work [2]int
	for i, size := range []int{n, 2 * n} {
		src := script(size)
		w, err := concatWork(t, src)
		switch {
		case want == "" && err != nil:
			t.Fatalf("%s, %d: refused: %v", name, size, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("%s, %d: error %v, want it to contain %q", name, size, err, want)
		case w > len(src):
			t.Errorf("%s, %d: %d nodes read for a body of %d bytes", name, size, w, len(src))
		}
		work[i] = w
	}
	if work[0] == 0 || work[1] > 2*work[0]+8 {
		t.Errorf("%s: %d nodes read for %d, %d for %d: not linear", name, work[0], n, work[1], 2*n)
	}
}

// TestConcatWorkLinear: the concatenation rules read each node of a chain
// once, whatever its shape and length (they used to read a chain's whole
// subtree again at each of its links: cubic in a long chain).
func TestConcatWorkLinear(t *testing.T) {
	for shape, chain := range chainShapes {
		// One admitted chain, up to the bound.
		checkLinear(t, shape+" chain", func(n int) string {
			decl, names := locals(n)
			return decl + "return " + chain(names)
		}, maxConcat/2, "")
		// The same in a loop, where a name's own value is looked for too.
		checkLinear(t, shape+" chain in a loop", func(n int) string {
			decl, names := locals(n)
			return decl + "local s = ''\nfor i = 1, #ARGV do s = " + chain(names) + " end\nreturn s"
		}, maxConcat/2, "")
		// Many chains.
		checkLinear(t, shape+" chains", func(n int) string {
			decl, names := locals(maxConcat)
			return decl + strings.Repeat("redis.log(redis.LOG_DEBUG, "+chain(names)+")\n", n)
		}, 20, "")
		// A chain far over the bound.
		checkLinear(t, shape+" long chain", func(n int) string {
			decl, names := locals(10)
			ops := make([]string, n)
			for i := range ops {
				ops[i] = names[i%len(names)]
			}
			return decl + "return " + chain(ops)
		}, 1000, "more than 64 operands")
	}
	// The body of the report: 62 KB, 7000 operands, 150 of them locals.
	names := make([]string, 7000)
	for i := range names {
		names[i] = fmt.Sprintf("a%d", i)
	}
	src := "local " + strings.Join(names[:150], ", ") + "\nreturn " + strings.Join(names, " .. ")
	if w, err := concatWork(t, src); err == nil || !strings.Contains(err.Error(), "more than 64 operands") || w > 4*maxConcat {
		t.Errorf("7000 operands: %d nodes read, error %v", w, err)
	}
}

// TestConcatOperandBound: a chain has at most maxConcat operands, counted
// across parentheses but not into a call's arguments; repeats of a name
// are refused as before, naming the first one that comes again.
func TestConcatOperandBound(t *testing.T) {
	decl, names := locals(maxConcat + 1)
	for shape, chain := range chainShapes {
		if _, err := Check(decl + "return " + chain(names[:maxConcat])); err != nil {
			t.Errorf("%s chain of %d: %v", shape, maxConcat, err)
		}
		_, err := Check(decl + "return " + chain(names))
		want := "a concatenation of more than 64 operands (a .. b .. …, parts in parentheses included"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s chain of %d: error %v, want it to contain %q", shape, maxConcat+1, err, want)
		}
	}
	for _, tc := range []struct{ name, src, want string }{
		{"literals and fields count", "return KEYS[1]" + strings.Repeat(" .. ':'", maxConcat-1), ""},
		{"one more literal", "return KEYS[1]" + strings.Repeat(" .. ':'", maxConcat), "more than 64 operands"},
		{"a call's argument is a chain of its own", decl + "return tostring(" + rightChain(names[:maxConcat]) + ") .. " + rightChain(names[:maxConcat-1]), ""},
		{"a name again, first repeat left to right", `local a, b = ARGV[1], ARGV[2]; return a .. b .. (b .. a)`, "a string concatenated with itself ('a' .. 'a'"},
		{"a name again inside a call's argument", `local a, b = ARGV[1], ARGV[2]; return a .. tostring(b .. 'x' .. b)`, "a string concatenated with itself ('b' .. 'b'"},
	} {
		_, err := Check(tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
