package quorum_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

type opRecord struct {
	op, outcome   string
	validity, ttl time.Duration
}

type nodeRecord struct {
	node, op string
	failed   bool
}

// recObserver records every report.
type recObserver struct {
	mu    sync.Mutex
	ops   []opRecord
	nodes []nodeRecord
}

func (r *recObserver) NodesDone(op string, calls []quorum.NodeResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range calls {
		r.nodes = append(r.nodes, nodeRecord{c.Node, op, c.Err != nil})
	}
}

func (r *recObserver) OpDone(op, outcome string, d time.Duration, validity, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, opRecord{op, outcome, validity, ttl})
}

func (r *recObserver) take() ([]opRecord, []nodeRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops, nodes := r.ops, r.nodes
	r.ops, r.nodes = nil, nil
	return ops, nodes
}

func TestObserverReportsOperations(t *testing.T) {
	fs, nodes := newNodes(3)
	rec := &recObserver{}
	cfg := testConfig()
	cfg.Observer = rec
	c := newCluster(t, nodes, cfg)
	ctx := context.Background()
	ttl := 10 * time.Second

	cases := []struct {
		name    string
		run     func()
		op      string
		outcome string
	}{
		{"acquire ok", func() { _, _ = c.Acquire(ctx, "k", "t1", ttl) }, quorum.OpAcquire, quorum.OutcomeOK},
		{"acquire contended", func() { _, _ = c.Acquire(ctx, "k", "t2", ttl) }, quorum.OpAcquire, quorum.OutcomeContended},
		{"extend ok", func() { _, _ = c.Extend(ctx, "k", "t1", ttl) }, quorum.OpExtend, quorum.OutcomeOK},
		{"get ok", func() { _, _ = c.Get(ctx, "k") }, quorum.OpGet, quorum.OutcomeOK},
		{"release ok", func() { _, _ = c.Release(ctx, "k", "t1") }, quorum.OpRelease, quorum.OutcomeOK},
		{"release not held", func() { _, _ = c.Release(ctx, "k", "t1") }, quorum.OpRelease, quorum.OutcomeContended},
		{"bad ttl", func() { _, _ = c.Acquire(ctx, "k", "t1", 0) }, quorum.OpAcquire, quorum.OutcomeError},
	}
	for _, tc := range cases {
		tc.run()
		ops, nodeCalls := rec.take()
		if len(ops) != 1 || ops[0].op != tc.op || ops[0].outcome != tc.outcome {
			t.Errorf("%s: ops = %+v, want one %s/%s", tc.name, ops, tc.op, tc.outcome)
			continue
		}
		for _, n := range nodeCalls {
			if n.op != tc.op {
				t.Errorf("%s: node call labelled %q, want %q", tc.name, n.op, tc.op)
			}
		}
		if tc.outcome == quorum.OutcomeOK && (tc.op == quorum.OpAcquire || tc.op == quorum.OpExtend) {
			if ops[0].ttl != ttl || ops[0].validity <= 0 || ops[0].validity >= ttl {
				t.Errorf("%s: validity %v of ttl %v", tc.name, ops[0].validity, ops[0].ttl)
			}
		}
	}

	for _, f := range fs[:2] {
		f.SetFault(errBoom)
	}
	_, _ = c.Acquire(ctx, "k2", "t", ttl)
	ops, nodeCalls := rec.take()
	if len(ops) != 1 || ops[0].outcome != quorum.OutcomeNoQuorum {
		t.Fatalf("ops = %+v, want one no_quorum", ops)
	}
	failed := 0
	for _, n := range nodeCalls {
		if n.failed {
			failed++
		}
	}
	if failed < 2 {
		t.Errorf("node calls %+v: want the two failing nodes reported", nodeCalls)
	}
}

func TestInspect(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	ctx := context.Background()
	put(t, fs[0], "k", "a", 5*time.Second)
	put(t, fs[1], "k", "a", 4*time.Second)
	fs[2].SetFault(errBoom)

	in := c.Inspect(ctx, "k")
	if !in.HasQuorum() || in.Answered != 2 || in.Quorum != 2 {
		t.Fatalf("answered %d of quorum %d", in.Answered, in.Quorum)
	}
	if !in.Holder.Held || in.Holder.Token != "a" || in.Holder.PTTL > 4*time.Second {
		t.Errorf("holder = %+v, want a with at most 4s", in.Holder)
	}
	want := []struct {
		name    string
		present bool
		failed  bool
	}{{"n0", true, false}, {"n1", true, false}, {"n2", false, true}}
	for i, w := range want {
		v := in.Nodes[i]
		if v.Node != w.name || v.Present != w.present || (v.Err != nil) != w.failed {
			t.Errorf("node %d = %+v, want %+v", i, v, w)
		}
	}

	fs[1].SetFault(errBoom)
	if in := c.Inspect(ctx, "k"); in.HasQuorum() || in.Holder.Held {
		t.Errorf("with 1 of 3 answering: %+v", in)
	}
}

// batchObserver keeps every NodesDone call as it came, and signals each.
type batchObserver struct {
	mu      sync.Mutex
	batches [][]quorum.NodeResult
	got     chan struct{}
}

func (b *batchObserver) NodesDone(op string, calls []quorum.NodeResult) {
	b.mu.Lock()
	b.batches = append(b.batches, append([]quorum.NodeResult(nil), calls...))
	b.mu.Unlock()
	b.got <- struct{}{}
}

func (b *batchObserver) OpDone(string, string, time.Duration, time.Duration, time.Duration) {}

// A round reports its node calls in one NodesDone once its last reply is
// in, a late one included: each node once, by its index and name in
// configuration order, with its error.
func TestRoundReportsNodesOnce(t *testing.T) {
	fs, nodes := newNodes(3)
	fs[2].SetDelay(stall)
	obs := &batchObserver{got: make(chan struct{}, 8)}
	cfg := testConfig()
	cfg.Observer = obs
	c := newCluster(t, nodes, cfg)
	if _, err := c.Acquire(context.Background(), "k", "t1", time.Minute); err != nil {
		t.Fatal(err)
	}
	<-obs.got // the stalled node's deadline ends the round
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.batches) != 1 || len(obs.batches[0]) != 3 {
		t.Fatalf("reports %+v, want one of 3 calls", obs.batches)
	}
	for i, r := range obs.batches[0] {
		if r.Index != i || r.Node != fs[i].Name() || (r.Err != nil) != (i == 2) {
			t.Errorf("call %d reported as %+v", i, r)
		}
	}
}
