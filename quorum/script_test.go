package quorum

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func iv(n int64) *Value    { return &Value{Kind: IntValue, Int: n} }
func bv(s string) *Value   { return &Value{Kind: BulkValue, Str: s} }
func ev(s string) *Value   { return &Value{Kind: ErrorValue, Str: s} }
func nv() *Value           { return &Value{Kind: NilValue} }
func av(e ...Value) *Value { return &Value{Kind: ArrayValue, Elems: e} }

func TestReplyRule(t *testing.T) {
	tests := []struct {
		name string
		vals []*Value
		want Value
		rule RuleOutcome
	}{
		{"all equal", []*Value{iv(1), iv(1), iv(1)}, *iv(1), RuleEqual},
		{"majority equal", []*Value{iv(0), iv(1), iv(1)}, *iv(1), RuleEqual},
		{"majority nil", []*Value{iv(900), nv(), nv()}, *nv(), RuleEqual},
		{"majority equal, one silent", []*Value{nil, bv("a"), bv("a")}, *bv("a"), RuleEqual},
		{"equal nested arrays", []*Value{av(*bv("t"), *iv(5)), av(*bv("t"), *iv(5)), av(*bv("t"), *iv(6))}, *av(*bv("t"), *iv(5)), RuleEqual},
		{"ints of one class: smallest", []*Value{iv(900), nv(), iv(850)}, *iv(850), RuleClass},
		{"ints, three differ: smallest", []*Value{iv(9), iv(7), iv(8)}, *iv(7), RuleClass},
		{"errors differ: first most frequent", []*Value{ev("ERR a"), ev("ERR b"), iv(1)}, *ev("ERR a"), RuleClass},
		{"others mixed: most frequent", []*Value{av(*iv(1)), bv("x"), av(*iv(2)), bv("x"), nv()}, *bv("x"), RuleClass},
		{"too few answered", []*Value{iv(1), nil, nil}, Value{}, RuleTooFew},
		{"too few, none", []*Value{nil, nil, nil}, Value{}, RuleTooFew},
		{"no class majority", []*Value{iv(1), nv(), ev("ERR x")}, Value{}, RuleDisagreed},
		{"two and two of five, one silent", []*Value{iv(1), iv(2), nv(), nv(), nil}, Value{}, RuleDisagreed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rule := ReplyRule(tt.vals, Quorum(len(tt.vals)))
			if rule != tt.rule || !EqualValues(got, tt.want) {
				t.Fatalf("ReplyRule = %+v, %v; want %+v, %v", got, rule, tt.want, tt.rule)
			}
		})
	}
}

// evalNode answers Eval with a fixed reply and records every call.
// It stays a stub: its tests give the quorum's rule chosen replies and effects per node, which one script would give only under per-node state built to order.
type evalNode struct {
	name string
	mu   sync.Mutex
	rep  Reply // Eval's reply
	undo error // UndoEval's error
	cmds []Cmd
}

func (n *evalNode) Name() string       { return n.name }
func (n *evalNode) Watch(Watcher) bool { return false }
func (n *evalNode) Close() error       { return nil }
func (n *evalNode) Do(_ time.Time, cmd Cmd, r Receiver) {
	n.mu.Lock()
	n.cmds = append(n.cmds, cmd)
	rep := n.rep
	if cmd.Kind == UndoEval {
		rep = Reply{OK: true, Err: n.undo}
	}
	n.mu.Unlock()
	r.Receive(rep)
}

func (n *evalNode) kinds() []CmdKind {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ks []CmdKind
	for _, c := range n.cmds {
		ks = append(ks, c.Kind)
	}
	return ks
}

func (n *evalNode) calls() []Cmd {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Cmd(nil), n.cmds...)
}

func evalNodes(reps ...Reply) ([]*evalNode, []Node) {
	var ens []*evalNode
	var ns []Node
	for i, r := range reps {
		n := &evalNode{name: "e" + itoa(i), rep: r}
		ens, ns = append(ens, n), append(ns, n)
	}
	return ens, ns
}

func itoa(i int) string { return string(rune('0' + i)) }

func val(v *Value) Reply { return Reply{OK: true, Value: v} }

var errNodeDown = errors.New("node down")

// did is a marked run's reply that changed something (effect e).
func did(v *Value, e string) Reply { return Reply{OK: true, Value: v, Effect: e} }

// TestEvalUndoTargets: which nodes get UndoEval after a writing script's
// round, which get ForgetEval, and what Eval answers: a writing round is
// decided by what the nodes changed, not by what they answered.
func TestEvalUndoTargets(t *testing.T) {
	down := Reply{Err: errNodeDown}
	tests := []struct {
		name   string
		reps   []Reply
		writes bool
		want   *Value // nil: an error
		undone []bool
		forgot []bool
	}{
		{"all made one change: no undo", []Reply{did(iv(1), "A"), did(iv(1), "A"), did(iv(1), "A")}, true, iv(1),
			[]bool{false, false, false}, []bool{true, true, true}},
		{"all changed nothing", []Reply{val(iv(0)), val(iv(0)), val(iv(0))}, true, iv(0),
			[]bool{false, false, false}, []bool{false, false, false}},
		{"a minority granted: undone, the others answer", []Reply{did(nv(), "A"), val(iv(800)), val(iv(700))}, true, iv(700),
			[]bool{true, false, false}, []bool{false, false, false}},
		{"a majority granted, one refused", []Reply{val(iv(0)), did(iv(1), "A"), did(iv(1), "A")}, true, iv(1),
			[]bool{false, false, false}, []bool{false, true, true}},
		{"one grant, one refusal, one silent", []Reply{did(iv(0), "A"), val(iv(25000)), down}, true, nil,
			[]bool{true, false, true}, []bool{false, false, false}},
		{"strings: ACQUIRED of one, BUSY of one", []Reply{did(bv("ACQUIRED"), "A"), val(bv("BUSY")), down}, true, nil,
			[]bool{true, false, true}, []bool{false, false, false}},
		{"two changes differ", []Reply{did(iv(1), "A"), did(iv(1), "B"), val(iv(1))}, true, nil,
			[]bool{true, true, false}, []bool{false, false, false}},
		{"equal replies, a minority's change", []Reply{did(iv(1), "A"), val(iv(1)), val(iv(1))}, true, iv(1),
			[]bool{true, false, false}, []bool{false, false, false}},
		{"a failed node is undone", []Reply{did(iv(1), "A"), down, did(iv(1), "A")}, true, iv(1),
			[]bool{false, true, false}, []bool{true, false, true}},
		{"no quorum: every node that may have changed", []Reply{did(iv(1), "A"), down, down}, true, nil,
			[]bool{true, true, true}, []bool{false, false, false}},
		{"one change, no reply among it", []Reply{did(iv(1), "A"), did(nv(), "A"), val(ev("ERR x"))}, true, nil,
			[]bool{true, true, false}, []bool{false, false, false}},
		{"read-only: the reply rule", []Reply{val(iv(0)), val(iv(1)), val(iv(1))}, false, iv(1),
			[]bool{false, false, false}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ens, ns := evalNodes(tt.reps...)
			cfg := testConfig()
			cfg.SessionTTL = 7 * time.Second
			c := newCluster(t, ns, cfg)
			defer c.Close()
			s := &Script{Src: "return 1", SHA: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}
			got, err := c.Eval(context.Background(), s, []string{"k"}, []string{"a"}, tt.writes)
			if tt.want == nil {
				if !errors.Is(err, ErrNoQuorum) {
					t.Fatalf("Eval = %+v, %v; want a NOQUORUM error", got, err)
				}
			} else if err != nil || !EqualValues(got.Value, *tt.want) {
				t.Fatalf("Eval = %+v, %v; want %+v", got, err, *tt.want)
			}
			for i, n := range ens {
				cmds := n.calls()
				ev := cmds[0]
				if ev.Kind != Eval || ev.Limit != 7*time.Second || ev.Script != s || ev.Args[0] != "a" {
					t.Fatalf("node %d first call %+v", i, ev)
				}
				if tt.writes != (strings.HasPrefix(ev.Mark, "redlockd:script:{k}:") && ev.TTL == cfg.MaxTTL && ev.Max == cfg.MaxTTL) {
					t.Fatalf("node %d Eval mark %q ttl %v max %v (writes %v)", i, ev.Mark, ev.TTL, ev.Max, tt.writes)
				}
				var undone, forgot bool
				for _, cmd := range cmds[1:] {
					switch {
					case cmd.Kind == UndoEval && cmd.Mark == ev.Mark && cmd.Keys[0] == "k" && !undone:
						undone = true
					case cmd.Kind == ForgetEval && cmd.Mark == ev.Mark && !forgot:
						forgot = true
					default:
						t.Errorf("node %d: unexpected %+v", i, cmd)
					}
				}
				if undone != tt.undone[i] || forgot != tt.forgot[i] {
					t.Errorf("node %d calls %v; want undone %v, forgotten %v", i, n.kinds(), tt.undone[i], tt.forgot[i])
				}
			}
		})
	}
}

// TestEvalDisagreeError: a split without a majority class is a NOQUORUM
// error that says the backends disagreed.
func TestEvalDisagreeError(t *testing.T) {
	_, ns := evalNodes(val(iv(1)), val(nv()), val(ev("ERR x")))
	c := newCluster(t, ns, testConfig())
	defer c.Close()
	_, err := c.Eval(context.Background(), &Script{Src: "x", SHA: "y"}, nil, nil, false)
	var de *DisagreeError
	if !errors.As(err, &de) || de.Answered != 3 || de.Total != 3 || !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("Eval = %v; want a DisagreeError of 3 of 3", err)
	}
	if Outcome(err) != OutcomeNoQuorum {
		t.Fatalf("Outcome = %s", Outcome(err))
	}
}

// TestEvalUndoRetried: an undo that a node does not answer is sent to it
// again until it does.
func TestEvalUndoRetried(t *testing.T) {
	ens, ns := evalNodes(val(iv(1)), val(iv(1)), did(nv(), "A"))
	ens[2].undo = errNodeDown
	cfg := testConfig()
	cfg.ReleaseRetry = 5 * time.Millisecond
	c := newCluster(t, ns, cfg)
	defer c.Close()
	if _, err := c.DB(3).Eval(context.Background(), &Script{Src: "x", SHA: "y"}, []string{"k", "l"}, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := c.PendingReleases(); got[2] != 1 || got[0]+got[1] != 0 {
		t.Fatalf("pending after the round = %v", got)
	}
	ens[2].mu.Lock()
	ens[2].undo = nil
	ens[2].mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for c.PendingReleases()[2] != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the undo was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmds := ens[2].calls()
	last := cmds[len(cmds)-1]
	if last.Kind != UndoEval || last.Mark != cmds[0].Mark || last.DB != 3 || len(last.Keys) != 2 || last.TTL != cfg.MaxTTL {
		t.Fatalf("retried %+v", last)
	}
}

// evalObserver records each operation's name and outcome, and the
// operation each node call was reported under.
type evalObserver struct {
	mu    sync.Mutex
	ops   []struct{ op, outcome string }
	nodes []string
}

func (r *evalObserver) NodesDone(op string, calls []NodeResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range calls {
		r.nodes = append(r.nodes, op)
	}
}

func (r *evalObserver) OpDone(op, outcome string, _, _, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, struct{ op, outcome string }{op, outcome})
}

// TestEvalReported: a script's round is one "script" operation, its node
// calls (the undo's too) reported under it.
func TestEvalReported(t *testing.T) {
	_, ns := evalNodes(val(iv(1)), val(iv(1)), did(iv(0), "A"))
	rec := &evalObserver{}
	cfg := testConfig()
	cfg.Observer = rec
	c := newCluster(t, ns, cfg)
	defer c.Close()
	if _, err := c.Eval(context.Background(), &Script{Src: "x", SHA: "y"}, []string{"k"}, nil, true); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ops, nodes := rec.ops, rec.nodes
	if len(ops) != 1 || ops[0].op != OpScript || ops[0].outcome != OutcomeOK {
		t.Fatalf("ops = %+v", ops)
	}
	if len(nodes) != 4 {
		t.Fatalf("node calls = %+v; want 3 runs and 1 undo", nodes)
	}
	for _, op := range nodes {
		if op != OpScript {
			t.Fatalf("node call reported as %q", op)
		}
	}
}

// TestEvalTimed: the keys whose expiry the script set are those of the
// change that stands; none where the round failed or changed nothing.
func TestEvalTimed(t *testing.T) {
	timed := func(e string, each ...bool) Reply { r := did(iv(1), e); r.Each = each; return r }
	tests := []struct {
		name string
		reps []Reply
		want []bool
	}{
		{"stands", []Reply{timed("A", false, true), timed("A", false, true), val(iv(0))}, []bool{false, true}},
		{"nothing stands", []Reply{timed("A", true, true), val(iv(0)), val(iv(0))}, nil},
		{"failed", []Reply{timed("A", true, true), timed("B", true, true), val(iv(0))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ns := evalNodes(tt.reps...)
			c := newCluster(t, ns, testConfig())
			defer c.Close()
			got, _ := c.Eval(context.Background(), &Script{Src: "x", SHA: "y"}, []string{"k", "l"}, nil, true)
			if !slices.Equal(got.Timed, tt.want) {
				t.Fatalf("Timed = %v; want %v", got.Timed, tt.want)
			}
		})
	}
}
