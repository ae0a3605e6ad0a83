package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/raceflag"
)

// yesNode answers every command at once with OK, allocating nothing: what
// the engine itself allocates per round is then all that is counted.
// It stays a stub: the allocation tests count every allocation, and the embedded engine allocates per command.
type yesNode struct{ name string }

var _ Node = yesNode{}

func (n yesNode) Name() string                      { return n.name }
func (n yesNode) Do(_ time.Time, _ Cmd, r Receiver) { r.Receive(Reply{OK: true, N: 1}) }
func (n yesNode) Watch(Watcher) bool                { return false }
func (n yesNode) Close() error                      { return nil }

func yesCluster(t *testing.T, n int, obs Observer) *Cluster {
	t.Helper()
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = yesNode{name: string(rune('a' + i))}
	}
	cfg := testConfig()
	cfg.Observer = obs
	return newCluster(t, nodes, cfg)
}

// The hot operations' allocations per call, engine only (N=3): the round,
// its replies and the few closures that chain its steps. The budgets are
// what the engine allocates today; they guard it against creeping back to
// a goroutine, a context or a channel per node. The async acquire and
// release, the proxy's fast path, recycle their rounds and allocate
// nothing.
func TestRoundAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	t.Run("no observer", func(t *testing.T) { roundAllocations(t, yesCluster(t, 3, nil), false) })
	// A round's report of its node calls costs no allocation of its own;
	// an operation timed by begin pays for begin's closure.
	t.Run("observer", func(t *testing.T) { roundAllocations(t, yesCluster(t, 3, nopObserver{}), true) })
}

// nopObserver takes every report and keeps nothing.
type nopObserver struct{}

func (nopObserver) NodesDone(string, []NodeResult)                                     {}
func (nopObserver) OpDone(string, string, time.Duration, time.Duration, time.Duration) {}

// roundAllocations checks c's hot operations against their budgets;
// observed adds one for those whose report begin times.
func roundAllocations(t *testing.T, c *Cluster, observed bool) {
	ctx := context.Background()
	// A client's ctx can end: the rounds that stop waiting for it must
	// cost no more than those that cannot.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	noop := func(Lock, error) {}
	cases := []struct {
		name   string
		budget float64
		begun  bool // the operation's report is begin's closure
		run    func()
	}{
		{"AcquireAsync", 0, false, func() { c.AcquireAsync(nil, SetNX, "k", "t", time.Second, noop) }},
		{"Acquire", 3, false, func() { _, _ = c.Acquire(ctx, "k", "t", time.Second) }},
		{"ReleaseAsync", 0, false, func() { c.ReleaseAsync(nil, "k", "t", func(bool, error) {}) }},
		{"Release", 3, false, func() { _, _ = c.Release(ctx, "k", "t") }},
		{"Extend", 6, true, func() { _, _ = c.Extend(ctx, "k", "t", time.Second) }},
		{"Get", 6, true, func() { _, _ = c.Get(ctx, "k") }},
		{"Acquire, cancellable ctx", 3, false, func() { _, _ = c.Acquire(cctx, "k", "t", time.Second) }},
		{"Release, cancellable ctx", 3, false, func() { _, _ = c.Release(cctx, "k", "t") }},
		{"Extend, cancellable ctx", 6, true, func() { _, _ = c.Extend(cctx, "k", "t", time.Second) }},
		{"Get, cancellable ctx", 6, true, func() { _, _ = c.Get(cctx, "k") }},
	}
	for _, tc := range cases {
		budget := tc.budget
		if observed && tc.begun {
			budget++
		}
		got := testing.AllocsPerRun(200, tc.run)
		t.Logf("%s: %.1f allocs", tc.name, got)
		if got > budget {
			t.Errorf("%s allocates %.1f times per call, budget %.0f", tc.name, got, budget)
		}
	}
}

// noNode refuses every command at once, allocating nothing.
// It stays a stub for yesNode's reason: a refused round's allocations are counted, and the engine allocates.
type noNode struct{ yesNode }

func (n noNode) Do(_ time.Time, _ Cmd, r Receiver) { r.Receive(Reply{}) }

// A refused acquire (the common case under contention) costs no more than
// a granted one: where every node said no, nothing is undone and no
// release round is made.
func TestRefusedAcquireAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	nodes := make([]Node, 3)
	for i := range nodes {
		nodes[i] = noNode{yesNode{name: string(rune('a' + i))}}
	}
	c := newCluster(t, nodes, testConfig())
	var err error
	done := func(_ Lock, e error) { err = e } // the caller's, made once
	got := testing.AllocsPerRun(200, func() { c.AcquireAsync(nil, SetNX, "k", "t", time.Second, done) })
	if err != ErrNotAcquired {
		t.Fatalf("refused acquire: %v", err)
	}
	t.Logf("refused AcquireAsync: %.1f allocs", got)
	if got > 0 {
		t.Errorf("a refused AcquireAsync allocates %.1f times per call, budget 0", got)
	}
}
