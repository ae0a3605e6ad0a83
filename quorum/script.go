package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redlockd/redlockd/internal/slot"
)

// ErrDisagreed is matched (errors.Is) by every *DisagreeError.
var ErrDisagreed = errors.New("quorum: backends disagreed")

// DisagreeError reports a replicated script whose answers had no majority
// under the reply rule (see Eval): enough nodes answered, but no reply
// and no class of replies was given by a majority. It matches ErrNoQuorum
// too: like too few answers, it leaves the outcome unknown.
type DisagreeError struct {
	Answered int
	Total    int
}

func (e *DisagreeError) Error() string {
	return fmt.Sprintf("backends disagreed: %d of %d answered, no reply had a majority", e.Answered, e.Total)
}

func (e *DisagreeError) Is(target error) bool { return target == ErrDisagreed || target == ErrNoQuorum }

// scriptMarkKey is where a node records what one writing script's round
// did there (see Eval). It shares the hash tag of the script's first key.
func scriptMarkKey(key, token string) string {
	return "redlockd:script:" + slot.Tagged(key) + ":" + token
}

// Eval runs script s on every node, in c's database, with keys and args, in one round,
// and returns the reply the rule below picks from the nodes' answers.
// Every reply is awaited: a straggler's effect must be known before it
// is undone.
//
// The reply rule: if at least a majority of nodes gave equal values, that
// value. Otherwise, if fewer than a majority answered, a *NoQuorumError.
// Otherwise the answers are grouped by class (nil, error, anything else);
// a class given by a majority answers with its most conservative value:
// the smallest when every value of the class is an integer, else the
// value most nodes of the class gave (a tie: the first in configuration
// order). No class with a majority: a *DisagreeError.
//
// A writing script (writes) with keys is run with a mark: each node
// records, in the script's atomic step, how each key was before and after.
// Every node whose answer differs from the reply, or that did not answer,
// is then asked to undo its run (a key still as the script left it is put
// back), and so is every node when the round fails: a granting script
// leaves nothing behind where the round did not grant. An undo that does
// not reach a node is sent again later (Config.ReleaseRetry).
func (c *Cluster) Eval(ctx context.Context, s *Script, keys, args []string, writes bool) (v Value, err error) {
	end := c.begin(OpScript)
	defer func() { end(err, 0, 0) }()
	if err := ctx.Err(); err != nil {
		return Value{}, err
	}
	cmd := Cmd{Kind: Eval, Script: s, DB: c.db, Keys: keys, Args: args, Limit: c.cfg.SessionTTL}
	if writes && len(keys) > 0 {
		// The undo record lives as long as a release that does not know
		// its lock's ttl is retried.
		cmd.Mark, cmd.TTL = scriptMarkKey(keys[0], NewToken()), c.pending.horizon
	}
	r, t := c.collect(OpScript, same(cmd), anyVote)
	v, err = c.pickReply(r, &t)
	if cmd.Mark != "" {
		c.undoEval(r, cmd, v, err)
	}
	return v, err
}

// pickReply applies Eval's reply rule to round r, every reply in.
func (c *Cluster) pickReply(r *round, t *tally) (Value, error) {
	vals := make([]*Value, len(r.calls))
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && rep.Value != nil {
			vals[i] = rep.Value
		}
	}
	v, rule := ReplyRule(vals, c.Quorum())
	switch rule {
	case RuleTooFew:
		return Value{}, c.noQuorum(t)
	case RuleDisagreed:
		return Value{}, &DisagreeError{Answered: t.answered(), Total: len(c.nodes)}
	}
	return v, nil
}

// RuleOutcome says which part of the reply rule decided.
type RuleOutcome uint8

const (
	// RuleEqual: a majority gave this value.
	RuleEqual RuleOutcome = iota + 1
	// RuleClass: a majority gave values of this class.
	RuleClass
	// RuleTooFew: fewer than a majority answered.
	RuleTooFew
	// RuleDisagreed: no value and no class had a majority.
	RuleDisagreed
)

// ReplyRule picks the reply of a replicated script from vals, one per node
// in configuration order (nil: no answer), with majority q; see Eval.
func ReplyRule(vals []*Value, q int) (Value, RuleOutcome) {
	answered := 0
	for i, v := range vals {
		if v == nil {
			continue
		}
		answered++
		if countWhere(vals, func(o *Value) bool { return EqualValues(*o, *v) }) >= q && firstEqual(vals, i) {
			return *v, RuleEqual
		}
	}
	if answered < q {
		return Value{}, RuleTooFew
	}
	for _, cl := range []valueClass{classNil, classError, classOther} {
		in := func(o *Value) bool { return classOf(*o) == cl }
		if countWhere(vals, in) >= q {
			return conservative(vals, in), RuleClass
		}
	}
	return Value{}, RuleDisagreed
}

// firstEqual reports whether vals[i] is the first value equal to itself,
// so a value is counted once.
func firstEqual(vals []*Value, i int) bool {
	for _, o := range vals[:i] {
		if o != nil && EqualValues(*o, *vals[i]) {
			return false
		}
	}
	return true
}

func countWhere(vals []*Value, f func(*Value) bool) int {
	n := 0
	for _, v := range vals {
		if v != nil && f(v) {
			n++
		}
	}
	return n
}

type valueClass uint8

const (
	classNil valueClass = iota
	classError
	classOther
)

func classOf(v Value) valueClass {
	switch v.Kind {
	case NilValue:
		return classNil
	case ErrorValue:
		return classError
	}
	return classOther
}

// conservative is the value of a class (the values in selects): the
// smallest integer when all are integers, else the most frequent value,
// the first in configuration order on a tie.
func conservative(vals []*Value, in func(*Value) bool) Value {
	var best *Value
	allInts := true
	for _, v := range vals {
		if v != nil && in(v) && v.Kind != IntValue {
			allInts = false
		}
	}
	bestN := 0
	for _, v := range vals {
		if v == nil || !in(v) {
			continue
		}
		if allInts {
			if best == nil || v.Int < best.Int {
				best = v
			}
			continue
		}
		if n := countWhere(vals, func(o *Value) bool { return EqualValues(*o, *v) }); n > bestN {
			best, bestN = v, n
		}
	}
	return *best
}

// EqualValues reports whether two script replies are the same (deep
// equality; an empty and a nil array are the same).
func EqualValues(a, b Value) bool {
	if a.Kind != b.Kind || a.Int != b.Int || a.Str != b.Str || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !EqualValues(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

// undoEval takes back the script's run on every node whose answer is not
// the reply (v; every node when the round failed), with every reply in,
// before the caller is answered. A node that does not answer the undo
// gets it again later.
func (c *Cluster) undoEval(g *round, cmd Cmd, v Value, failed error) {
	undo := func(i int) bool {
		rep := g.reply(i)
		return failed != nil || rep.Err != nil || rep.Value == nil || !EqualValues(*rep.Value, v)
	}
	if !slices.ContainsFunc(g.calls, func(nc nodeCall) bool { return undo(nc.i) }) {
		return // the usual round: every node gave the reply
	}
	ucmd := Cmd{Kind: UndoEval, Keys: cmd.Keys, Mark: cmd.Mark, DB: cmd.DB, TTL: cmd.TTL}
	ask := func(i int) (Cmd, bool) { return ucmd, undo(i) }
	r, _ := c.collect(OpScript, ask, okVote)
	for i := range r.calls {
		if r.calls[i].asked && unanswered(r.reply(i)) {
			c.pending.addUndoEval(i, cmd.Keys, cmd.Mark, cmd.DB, cmd.TTL)
		}
	}
}
