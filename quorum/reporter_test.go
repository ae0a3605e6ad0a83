package quorum

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/raceflag"
)

// countingObserver counts what the Cluster's Observer is told.
type countingObserver struct{ nodes, calls, ops atomic.Int32 }

func (o *countingObserver) NodesDone(_ string, calls []NodeResult) {
	o.nodes.Add(1)
	o.calls.Add(int32(len(calls)))
}

func (o *countingObserver) OpDone(string, string, time.Duration, time.Duration, time.Duration) {
	o.ops.Add(1)
}

// opReporter is the Reporter of one operation: it notes what it is told.
type opReporter struct {
	calls atomic.Int32 // RoundDone calls
	n     int          // calls reported
	got   string       // the report, as text
}

func (r *opReporter) RoundDone(rep *Report) {
	r.calls.Add(1)
	var nodes []string
	for _, c := range rep.Calls {
		nodes = append(nodes, c.Node)
	}
	r.n = len(rep.Calls)
	r.got = fmt.Sprintf("%s/%s ttl=%v calls=%s", rep.Op, rep.Outcome, rep.TTL, strings.Join(nodes, ","))
}

// An operation started with a Reporter is told to it once, before its
// done, with its outcome and the calls answered by then, and not to the
// Cluster's Observer, which is only told of the calls answered after
// that: here the node an acquire asks after a majority granted it.
func TestReporterToldOnce(t *testing.T) {
	obs := &countingObserver{}
	nodes := []Node{keyedNode{yesNode{"a"}}, keyedNode{yesNode{"b"}}, keyedNode{yesNode{"c"}}}
	cfg := testConfig()
	cfg.Observer = obs
	c := newCluster(t, nodes, cfg)
	for _, tc := range []struct {
		name string
		run  func(rp Reporter, done func())
		want string
		late int32 // calls the Observer is told of
	}{
		{"acquire", func(rp Reporter, done func()) {
			c.AcquireAsync(rp, SetNX, "k", "t", time.Second, func(Lock, error) { done() })
		}, "acquire/ok ttl=1s calls=a,b", 1},
		{"refused acquire", func(rp Reporter, done func()) {
			c.AcquireAsync(rp, SetNX, "no-k", "t", time.Second, func(Lock, error) { done() })
		}, "acquire/contended ttl=1s calls=a,b,c", 0},
		{"acquire of no ttl", func(rp Reporter, done func()) {
			c.AcquireAsync(rp, SetNX, "k", "t", 0, func(Lock, error) { done() })
		}, "acquire/error ttl=0s calls=", 0},
		{"release", func(rp Reporter, done func()) {
			c.ReleaseAsync(rp, "k", "t", func(bool, error) { done() })
		}, "release/ok ttl=0s calls=a,b,c", 0},
		{"renew", func(rp Reporter, done func()) {
			c.RenewAsync(rp, "k", "t", time.Second, func(Lock, error) { done() })
		}, "extend/ok ttl=1s calls=a,b,c", 0},
		{"renew of no ttl", func(rp Reporter, done func()) {
			c.RenewAsync(rp, "k", "t", 0, func(Lock, error) { done() })
		}, "extend/error ttl=0s calls=", 0},
		{"add of no time", func(rp Reporter, done func()) {
			c.ExtendAddAsync(rp, "k", "t", 0, time.Minute, func(Lock, error) { done() })
		}, "extend/error ttl=0s calls=", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs.nodes.Store(0)
			obs.calls.Store(0)
			rp := &opReporter{}
			tc.run(rp, func() {
				if rp.calls.Load() != 1 {
					t.Error("done came before the report")
				}
			})
			if n := rp.calls.Load(); n != 1 {
				t.Fatalf("RoundDone called %d times, want once", n)
			}
			if rp.got != tc.want {
				t.Errorf("report %q, want %q", rp.got, tc.want)
			}
			wantNodes := int32(0)
			if tc.late > 0 {
				wantNodes = 1
			}
			if n, calls, o := obs.nodes.Load(), obs.calls.Load(), obs.ops.Load(); n != wantNodes || calls != tc.late || o != 0 {
				t.Errorf("the Cluster's Observer got %d NodesDone of %d calls and %d OpDone, want %d of %d and none",
					n, calls, o, wantNodes, tc.late)
			}
		})
	}
}

// Reported rounds are pooled as the others are: with a node answering
// after the rounds were decided, each operation is still told to its own
// Reporter exactly once, before its done, and every call of every round
// is reported once, to the Reporter or (answered after the outcome) to
// the Cluster's Observer; the rounds recycle under the reports (run with
// -race).
func TestReporterUnderLateReplies(t *testing.T) {
	late := newLateNode("late")
	nodes := []Node{keyedNode{yesNode{"a"}}, keyedNode{yesNode{"b"}}, late}
	obs := &countingObserver{}
	cfg := testConfig()
	cfg.Observer = obs
	c := newCluster(t, nodes, cfg)
	rounds := 2000
	if raceflag.Enabled {
		rounds = 500
	}
	var failures atomic.Value
	fail := func(format string, args ...any) { failures.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	var reporters []*opReporter
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine sync.WaitGroup
			for i := range rounds {
				key := fmt.Sprintf("k%d-%d", g, i)
				if i%4 == 3 {
					key = "no-" + key
				}
				acq, rel := &opReporter{}, &opReporter{}
				mu.Lock()
				reporters = append(reporters, acq, rel)
				mu.Unlock()
				mine.Add(2)
				c.AcquireAsync(acq, SetNX, key, "t", time.Second, func(Lock, error) {
					defer mine.Done()
					if acq.calls.Load() != 1 {
						fail("acquire of %s: done before its report", key)
					}
				})
				c.ReleaseAsync(rel, key, "t", func(bool, error) {
					defer mine.Done()
					if rel.calls.Load() != 1 {
						fail("release of %s: done before its report", key)
					} else if !strings.HasSuffix(rel.got, "calls=a,b,late") {
						fail("release report %q, want every call", rel.got)
					}
				})
			}
			mine.Wait()
		}()
	}
	wg.Wait()
	late.stop(t)
	calls := obs.calls.Load()
	for _, rp := range reporters {
		if n := rp.calls.Load(); n != 1 {
			fail("a Reporter was told %d times", n)
			break
		}
		calls += int32(rp.n)
	}
	if want := int32(3 * len(reporters)); calls != want {
		fail("%d calls reported, want %d: 3 for each of %d operations", calls, want, len(reporters))
	}
	if o := obs.ops.Load(); o != 0 {
		fail("the Cluster's Observer was told of %d operations", o)
	}
	if f := failures.Load(); f != nil {
		t.Fatal(f)
	}
}

type nopReporter struct{}

func (nopReporter) RoundDone(*Report) {}

// The proxy's fast path with its report: an async acquire or release
// told to a Reporter allocates nothing either.
func TestReportedRoundAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	c := yesCluster(t, 3, nil)
	var rp nopReporter
	acquired := func(Lock, error) {}
	released := func(bool, error) {}
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"AcquireAsync", func() { c.AcquireAsync(rp, SetNX, "k", "t", time.Second, acquired) }},
		{"ReleaseAsync", func() { c.ReleaseAsync(rp, "k", "t", released) }},
	} {
		if got := testing.AllocsPerRun(200, tc.run); got > 0 {
			t.Errorf("%s allocates %.1f times per call, budget 0", tc.name, got)
		}
	}
}
