package quorum_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// readAnHourLater stamps every reply of n with a read time an hour
// later, as a node that says when it read the reply does.
func readAnHourLater(n quorum.Node) quorum.Node {
	return &nodetest.Hooked{Node: n, After: func(_ quorum.Cmd, rep *quorum.Reply) {
		rep.At = time.Now().Add(time.Hour)
	}}
}

// latencyObserver records each node's reported duration.
type latencyObserver struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (o *latencyObserver) NodesDone(op string, calls []quorum.NodeResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range calls {
		o.d[c.Node] = append(o.d[c.Node], c.D)
	}
}

func (o *latencyObserver) OpDone(string, string, time.Duration, time.Duration, time.Duration) {}

// A node's latency runs to the read time its reply carries; a reply
// without one is timed on receipt.
func TestReportNodeUsesReplyReadTime(t *testing.T) {
	fs, nodes := newNodes(3)
	nodes[0], nodes[1] = readAnHourLater(fs[0]), readAnHourLater(fs[1])
	obs := &latencyObserver{d: map[string][]time.Duration{}}
	cfg := testConfig()
	cfg.Observer = obs
	c := newCluster(t, nodes, cfg)
	if _, err := c.Acquire(context.Background(), "k", "t1", time.Minute); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, f := range fs[:2] {
		if d := obs.d[f.Name()]; len(d) != 1 || d[0] < time.Hour-time.Minute {
			t.Errorf("%s: durations %v, want one of about an hour (its reply's read time)", f.Name(), d)
		}
	}
	if d := obs.d[fs[2].Name()]; len(d) != 1 || d[0] < 0 || d[0] >= time.Hour-time.Minute {
		t.Errorf("%s: durations %v, want one measured on receipt", fs[2].Name(), d)
	}
}
