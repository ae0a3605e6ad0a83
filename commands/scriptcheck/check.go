// Package scriptcheck decides, from a Lua script's text alone, whether a
// majority vote over its per-node runs keeps Redlock's guarantee, so that
// the proxy may replicate it to every backend.
//
// A script is admitted when every key it touches comes from KEYS, it calls
// only commands whose per-node effect is an exclusive, expiring claim on
// those keys, and its running time is bounded by its input (a replicated
// script runs on every backend at once: an endless loop would make every
// backend BUSY). Nothing is executed: the script is parsed and its syntax
// tree walked. Whatever the walk cannot follow (a command name computed at
// run time, redis.call passed around, a global rebound) is refused.
package scriptcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Info is what the proxy needs to know about an admitted script.
type Info struct {
	// Writes: the script may change a key (it calls a write command), so
	// a failed round must take it back.
	Writes bool
	// DBArg > 0: the script switches its db with SELECT of
	// tonumber(ARGV[DBArg]) before touching any key. DB >= 0: with SELECT
	// of that literal db. Neither (DBArg 0, DB -1): it stays in the
	// connection's db.
	DBArg int
	DB    int
	// Of a SELECT of ARGV[DBArg]: DBArgNumber, it gets tonumber of it (a
	// Lua number, not the string); DBArgPcall, through redis.pcall (a
	// failed SELECT leaves the db as it was); DBLine, the line of the call
	// (ScriptDB).
	DBArgNumber bool
	DBArgPcall  bool
	DBLine      int
	// Publishes: the script calls PUBLISH (its channel is not a key).
	Publishes bool
	// NameArgs are the n of every ARGV[n] the script uses as a command
	// name; ArgNamesOK checks their values when the script is run.
	NameArgs []int
}

// Limits on what Check reads: Check runs once per new script body, but a
// client chooses the body.
const (
	// MaxSize is the largest body Check analyses.
	MaxSize = 64 << 10
	// MaxDepth bounds the nesting of the syntax tree, so that a hostile
	// body cannot exhaust the walk's stack (Lua itself stops at 200 C
	// levels).
	MaxDepth = 200
	// maxLiteralIterations bounds the iterations of nested numeric for
	// loops with literal bounds.
	maxLiteralIterations = 1 << 20
)

// refusal is the reason a script is refused; the walk panics with it and
// Check recovers it.
type refusal struct{ reason string }

// Check parses src and admits it, or returns an error that names the
// command or key that makes it unsafe to replicate. Every error is one
// line, ready to be a RESP error.
func Check(src string) (Info, error) {
	if len(src) > MaxSize {
		return Info{}, refuse(fmt.Sprintf("a script over %d KiB", MaxSize>>10))
	}
	chunk, err := parseScript(src)
	if err != nil {
		return Info{}, err
	}
	return analyse(chunk)
}

func analyse(chunk []ast.Stmt) (Info, error) {
	return newWalker().analyse(chunk)
}

// analyse walks chunk twice: the first walk learns which locals only ever
// hold keys (and which hold redis replies that nothing modifies), the
// second checks every command call against that.
func (w *walker) analyse(chunk []ast.Stmt) (info Info, err error) {
	defer func() {
		if r := recover(); r != nil {
			rf, ok := r.(refusal)
			if !ok {
				panic(r)
			}
			info, err = Info{}, refuse(rf.reason)
		}
	}()
	w.block(chunk)
	w.settle()
	w.final = true
	w.reset()
	w.block(chunk)
	w.checkExpired()
	return w.info, nil
}

func refuse(reason string) error {
	return errors.New("ERR redlockd cannot replicate this script: " + cut(reason))
}

// cut keeps an error's text short and on one line: names in it come from
// the script, and a RESP error cannot hold a newline.
func cut(s string) string {
	if len(s) > maxReason {
		s = strings.ToValidUTF8(s[:maxReason], "") + "…"
	}
	return oneLine(s)
}

// maxReason bounds the reason of a refusal, in bytes.
const maxReason = 512

// parseScript parses src as Redis compiles a script body: a leading
// "#!lua" line (Redis 7's flags) is not Lua.
func parseScript(src string) (chunk []ast.Stmt, err error) {
	if strings.HasPrefix(src, "#!") {
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			src = src[i:] // the newline stays: line numbers are kept
		} else {
			src = ""
		}
	}
	defer func() {
		if r := recover(); r != nil {
			chunk, err = nil, compileError(fmt.Sprint(r))
		}
	}()
	chunk, err = parse.Parse(strings.NewReader(src), "user_script")
	switch {
	case err != nil:
		return nil, compileError(syntaxMessage(err))
	case chunk == nil:
		// The parser stopped on something that is not an error value: it
		// gives an empty chunk, never nil, for a body it read through.
		return nil, compileError("user_script: the parser stopped")
	}
	return chunk, nil
}

// syntaxMessage puts a parse error in Redis's words: "user_script:3:
// <message> near '<token>'".
func syntaxMessage(err error) string {
	var pe *parse.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	if pe.Pos.Line == parse.EOF {
		return fmt.Sprintf("user_script: %s near '<eof>'", pe.Message)
	}
	return fmt.Sprintf("user_script:%d: %s near '%s'", pe.Pos.Line, pe.Message, pe.Token)
}

func compileError(msg string) error {
	return errors.New("ERR Error compiling script (new function): " + cut(msg))
}

// oneLine keeps an error to one line: a RESP error cannot hold a newline.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}
