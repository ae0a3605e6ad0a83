package quorum

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// asyncFakes, while set, makes newCluster wrap every fakeNode as an
// AsyncNode, so that the Cluster takes its async fan-out.
var asyncFakes atomic.Bool

// asyncFake is a fakeNode through the AsyncNode methods. Calls whose
// behaviour answers at once answer before the method returns, on the
// caller's goroutine; stalled and delayed ones answer from a goroutine of
// their own, by the deadline at the latest.
type asyncFake struct{ *fakeNode }

func asAsync(nodes []Node) []Node {
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		if f, ok := n.(*fakeNode); ok {
			n = asyncFake{f}
		}
		out[i] = n
	}
	return out
}

func (a asyncFake) blocks(op string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.ops[op]
	if !ok {
		b = a.def
	}
	return b == behaveStall || b == behaveDelay
}

// start runs call under a context that ends at deadline.
func (a asyncFake) start(op string, deadline time.Time, call func(ctx context.Context)) {
	run := func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		call(ctx)
	}
	if a.blocks(op) {
		go run()
		return
	}
	run()
}

func (a asyncFake) SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	a.start(opSetNX, deadline, func(ctx context.Context) { done(a.SetNX(ctx, key, token, ttl)) })
}

func (a asyncFake) CompareAndDeleteAsync(deadline time.Time, key, token string, _ bool, done func(bool, error)) {
	a.start(opCAD, deadline, func(ctx context.Context) { done(a.CompareAndDelete(ctx, key, token)) })
}

func (a asyncFake) CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	a.start(opCAE, deadline, func(ctx context.Context) { done(a.CompareAndExtend(ctx, key, token, ttl)) })
}

func (a asyncFake) GetAsync(deadline time.Time, key string, done func(string, time.Duration, bool, error)) {
	a.start(opGet, deadline, func(ctx context.Context) { done(a.Get(ctx, key)) })
}

// The fan-out's own tests, run again over async nodes: the same votes,
// early returns, cancellation, stalls, releases, retries and reports.
func TestAsyncFanout(t *testing.T) {
	tests := map[string]func(*testing.T){
		"AcquireVotes":                             TestAcquireVotes,
		"AcquireMixedAnswers":                      TestAcquireMixedAnswers,
		"AcquireInvalidTTL":                        TestAcquireInvalidTTL,
		"AcquireValidityClock":                     TestAcquireValidityClock,
		"AcquireReleaseSurvivesCancel":             TestAcquireReleaseSurvivesCancel,
		"AcquireCancelledCtx":                      TestAcquireCancelledCtx,
		"AcquireRoundOutlivesCancel":               TestAcquireRoundOutlivesCancel,
		"AcquireStalledNodes":                      TestAcquireStalledNodes,
		"AcquireSlowNodes":                         TestAcquireSlowNodes,
		"AcquireMutualExclusion":                   TestAcquireMutualExclusion,
		"Extend":                                   TestExtend,
		"Release":                                  TestRelease,
		"AcquireThenReleaseRoundTrip":              TestAcquireThenReleaseRoundTrip,
		"AcquireExpiredValidityReleasesStragglers": TestAcquireExpiredValidityReleasesStragglers,
		"FailedAcquireKeepsOwnEarlierLock":         TestFailedAcquireKeepsOwnEarlierLock,
		"Get":                                      TestGet,
		"ObserverReportsOperations":                TestObserverReportsOperations,
		"ReleaseRetriedOnNodeThatFailed":           TestReleaseRetriedOnNodeThatFailed,
		"FailedAcquireLateSetRemoved":              TestFailedAcquireLateSetRemoved,
		"PendingEndsWhenAbsentTwice":               TestPendingEndsWhenAbsentTwice,
		"HeldLockNotRetried":                       TestHeldLockNotRetried,
		"AcquireWaitSucceedsAfterRelease":          TestAcquireWaitSucceedsAfterRelease,
		"AcquireWaitGivesUp":                       TestAcquireWaitGivesUp,
	}
	asyncFakes.Store(true)
	defer asyncFakes.Store(false)
	for name, fn := range tests {
		t.Run(name, fn)
	}
}

// The async fan-out is taken only when every node is an AsyncNode.
func TestAsyncNeedsEveryNode(t *testing.T) {
	_, nodes := newFakes(3)
	if c := newCluster(t, nodes, testConfig()); c.async != nil {
		t.Fatal("sync nodes: the cluster took the async path")
	}
	mixed := asAsync(nodes)
	mixed[1] = nodes[1]
	if c := newCluster(t, mixed, testConfig()); c.async != nil {
		t.Fatal("one sync node: the cluster took the async path")
	}
	if c := newCluster(t, asAsync(nodes), testConfig()); c.async == nil {
		t.Fatal("async nodes: the cluster took the sync path")
	}
}

// A node whose votes do not count is vetoed on the async path too, after
// its answer.
func TestAsyncVeto(t *testing.T) {
	_, nodes := newFakes(3)
	c := newCluster(t, asAsync(nodes), testConfig())
	c.health.blocked[0].Store(refusedForever)
	c.health.blocked[1].Store(refusedForever)
	c.health.nodes[0].Refused = "test"
	c.health.nodes[1].Refused = "test"
	_, err := c.Acquire(context.Background(), "k", "t", time.Minute)
	if !errors.Is(err, ErrNoQuorum) || !errors.Is(err, ErrRefused) {
		t.Fatalf("Acquire with two refused nodes = %v; want no quorum, refused", err)
	}
}
