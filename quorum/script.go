package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
)

// ErrDisagreed is matched (errors.Is) by every *DisagreeError.
var ErrDisagreed = errors.New("quorum: backends disagreed")

// DisagreeError reports a replicated script whose answers had no majority
// under the rule (see Eval): enough nodes answered, but no reply and no
// class of replies (Effect: no change) was given by a majority. It
// matches ErrNoQuorum too: like too few answers, it leaves the outcome
// unknown.
type DisagreeError struct {
	Answered int
	Total    int
	// Effect: the nodes made different changes (a writing script).
	Effect bool
}

func (e *DisagreeError) Error() string {
	what := "reply"
	if e.Effect {
		what = "change"
	}
	return fmt.Sprintf("backends disagreed: %d of %d answered, no %s had a majority", e.Answered, e.Total, what)
}

func (e *DisagreeError) Is(target error) bool { return target == ErrDisagreed || target == ErrNoQuorum }

// MsgTTLExceedsMax is the error a script gets that set an expiry beyond
// the proxy's max-ttl (Cmd.Max), as SET gets it.
const MsgTTLExceedsMax = "ERR ttl exceeds max-ttl"

// scriptMarkKey is where a node records what one writing script's round
// did there (see Eval). It shares the hash tag of the script's first key.
func scriptMarkKey(key, token string) string {
	return "redlockd:script:" + slot.Tagged(key) + ":" + token
}

// ScriptResult is a replicated script's round as Eval decided it.
type ScriptResult struct {
	Value Value
	// Timed says, per key, whether the script gave the key an expiry of
	// its own on the nodes whose change stands (a writing script only).
	Timed []bool
}

// Eval runs script s on every node, in c's database, with keys and args,
// in one round, and decides it from the nodes' answers. Every reply is
// awaited: a straggler's effect must be known before it is undone.
//
// A script that does not write (writes false, or no keys) is decided by
// its reply (the reply rule): if at least a majority of nodes gave equal
// values, that value. Otherwise, if fewer than a majority answered, a
// *NoQuorumError. Otherwise the answers are grouped by class (nil, error,
// anything else); a class given by a majority answers with its most
// conservative value: the smallest when every value of the class is an
// integer, else the value most nodes of the class gave (a tie: the first
// in configuration order). No class with a majority: a *DisagreeError.
//
// A writing script is decided by its effect, since the proxy cannot know
// what its reply means (a grant, a refusal) but does know what each run
// changed: each node records, in the script's atomic step, how each key
// was before and after (the mark), and says what the run changed
// (Reply.Effect). The round stands only where a majority of nodes made
// the same change, "changed nothing" being one; the reply is then the
// reply rule's among those nodes. Every other node that changed something,
// or did not answer, is asked to undo its run (a key still as the script
// left it is put back). Without such a majority (or without a reply among
// it) every node that changed something is undone and the round fails:
// *NoQuorumError or *DisagreeError. So no client gets a reply that only
// a minority's write stands behind, and a granting script leaves nothing
// behind where the round did not grant. An undo that does not reach a
// node is sent again later (Config.ReleaseRetry). The records of a round
// that stands are dropped at once, without waiting for the nodes (a node
// that changed nothing keeps none).
//
// A key the script leaves without an expiry gets the session ttl
// (within MaxTTL); an expiry the script sets beyond MaxTTL takes its run
// back on that node, whose reply is MsgTTLExceedsMax.
func (c *Cluster) Eval(ctx context.Context, s *Script, keys, args []string, writes bool) (res ScriptResult, err error) {
	end := c.begin(OpScript)
	defer func() { end(err, 0, 0) }()
	if err := ctx.Err(); err != nil {
		return ScriptResult{}, err
	}
	// The max-ttl (or its default): the longest a release is retried.
	maxTTL := c.pending.horizon
	cmd := Cmd{Kind: Eval, Script: s, DB: c.db, Keys: keys, Args: args, Limit: min(c.cfg.SessionTTL, maxTTL)}
	if !writes || len(keys) == 0 {
		r, t, err := c.collectCtx(ctx, OpScript, same(cmd), anyVote)
		if err != nil {
			return res, err
		}
		res.Value, err = c.pickReply(r, &t)
		return res, err
	}
	// The record lives as long as a release that does not know its
	// lock's ttl is retried, unless the run tells the node a shorter life.
	//
	// A writing script's round is waited for whatever ctx says, unlike
	// every other round. A caller that leaves mid-round cannot be handled
	// as an acquire's is: its round may stand on a majority (then its
	// change is the keys' state, which any other client's round may
	// already have read and built on, as a script's reply or writes of
	// its own), and undoing it then, as a failed round is undone, would
	// take back a change others have seen. A failed round's undo never
	// does that: no majority made its change, so no round read it. Nor
	// can the change be left standing for a caller told ctx's error: a
	// granting script would leave a grant held by nobody until its ttl.
	cmd.Mark, cmd.TTL, cmd.Max = scriptMarkKey(keys[0], NewToken()), maxTTL, maxTTL
	r, t := c.collect(OpScript, same(cmd), anyVote)
	res, stands, err := c.decideEffect(r, &t)
	c.settleEval(r, cmd, stands)
	return res, err
}

// effectOf is node i's Effect in round r; false when it gave no answer.
func effectOf(r *round, i int) (string, bool) {
	rep := r.reply(i)
	return rep.Effect, rep.Err == nil && rep.Value != nil
}

// decideEffect applies Eval's effect rule to round r, every reply in:
// the result and the change that stands ("" : none, also when it failed).
func (c *Cluster) decideEffect(r *round, t *tally) (ScriptResult, string, error) {
	q := c.Quorum()
	stands, found := majorityEffect(r, q)
	if !found {
		if t.answered() < q {
			return ScriptResult{}, "", c.noQuorum(t)
		}
		return ScriptResult{}, "", &DisagreeError{Answered: t.answered(), Total: len(c.nodes), Effect: true}
	}
	vals := make([]*Value, len(r.calls))
	var timed []bool
	for i := range r.calls {
		if e, ok := effectOf(r, i); ok && e == stands {
			vals[i] = r.reply(i).Value
			if timed == nil && stands != "" {
				timed = r.reply(i).Each
			}
		}
	}
	v, rule := ReplyRule(vals, q)
	if rule != RuleEqual && rule != RuleClass {
		return ScriptResult{}, "", &DisagreeError{Answered: t.answered(), Total: len(c.nodes)}
	}
	return ScriptResult{Value: v, Timed: timed}, stands, nil
}

// majorityEffect is the Effect that at least q of round r's answers made,
// if any; every reply is in.
func majorityEffect(r *round, q int) (string, bool) {
	for i := range r.calls {
		e, ok := effectOf(r, i)
		if !ok {
			continue
		}
		n := 0
		for j := range r.calls {
			if f, ok := effectOf(r, j); ok && f == e {
				n++
			}
		}
		if n >= q {
			return e, true
		}
	}
	return "", false
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
	for _, v := range vals {
		if v == nil {
			continue
		}
		answered++
		// The first value of a majority returns: an equal one before it
		// would have had the same count.
		if countWhere(vals, func(o *Value) bool { return EqualValues(*o, *v) }) >= q {
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
	allInts := !slices.ContainsFunc(vals, func(v *Value) bool { return v != nil && in(v) && v.Kind != IntValue })
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
	return a.Kind == b.Kind && a.Int == b.Int && a.Str == b.Str && slices.EqualFunc(a.Elems, b.Elems, EqualValues)
}

// settleEval ends a writing script's round r, every reply in, in which
// the change stands stands ("" : none): before the caller is answered,
// every node that made another change, or did not answer, is undone; a
// node that does not answer the undo gets it again later. The records of
// the nodes whose change stands are dropped without waiting.
func (c *Cluster) settleEval(r *round, cmd Cmd, stands string) {
	var undo, forget []bool
	for i := range r.calls {
		e, ok := effectOf(r, i)
		undo = append(undo, !ok || (e != "" && e != stands))
		forget = append(forget, ok && e != "" && e == stands)
	}
	if slices.Contains(forget, true) {
		c.forgetEval(cmd, forget)
	}
	if !slices.Contains(undo, true) {
		return // the usual round: every node made the change that stands
	}
	ucmd := Cmd{Kind: UndoEval, Keys: cmd.Keys, Mark: cmd.Mark, DB: cmd.DB, TTL: cmd.TTL}
	ask := func(i int) (Cmd, bool) { return ucmd, undo[i] }
	u, _ := c.collect(OpScript, ask, okVote)
	u.eachUnanswered(func(i int) { c.pending.addUndoEval(i, cmd.Keys, cmd.Mark, cmd.DB, cmd.TTL) })
}

// forgetEval drops the record at cmd's mark on the nodes of which, as a
// node's own write: it goes out with whatever is sent to the node next,
// and nobody waits for it. A record that is not dropped so expires with
// what the script wrote.
func (c *Cluster) forgetEval(cmd Cmd, which []bool) {
	fcmd := Cmd{Kind: ForgetEval, Keys: cmd.Keys, Mark: cmd.Mark, DB: cmd.DB}
	deadline := time.Now().Add(c.cfg.NodeTimeout)
	for i, n := range c.nodes {
		if which[i] {
			n.Do(deadline, fcmd, ignoreReply)
		}
	}
}

// ignoreReply takes a reply nobody waits for.
var ignoreReply = ReceiverFunc(func(Reply) {})
