package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// Every round's backend replies and every quorum operation are reported:
// on warm backends and operation a success costs no allocation.
func TestObserveAllocations(t *testing.T) {
	m, nodes := warmMetrics()
	m.CommandDone("set", "acquired", time.Millisecond)
	round := results(nodes, 300*time.Microsecond)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"NodesDone", func() { m.NodesDone(quorum.OpAcquire, round) }},
		{"OpDone", func() {
			m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
		}},
		{"CommandDone", func() { m.CommandDone("set", "acquired", time.Millisecond) }},
	} {
		if got := testing.AllocsPerRun(1000, c.f); got != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, got)
		}
	}
}

// Replies reported from many goroutines at once are all counted, and the
// link is what the last report found.
func TestNodesDoneConcurrentCounts(t *testing.T) {
	m := New(Options{Backends: []string{"a:1"}})
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				if w%2 == 0 && i%10 == 0 {
					err = backend.ServerError{Code: "OOM", Text: "OOM command not allowed"}
				}
				if w == 1 && i%20 == 0 {
					err = context.DeadlineExceeded
				}
				nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, err)
			}
		}()
	}
	wg.Wait()
	const failed = workers/2*each/10 + each/20
	want := fmt.Sprintf(",calls=%d,errors=%d,avg_latency_us=1000", workers*each, failed)
	if f := m.BackendFields("a:1"); !strings.Contains(f, want) {
		t.Errorf("BackendFields = %q, want %q in it", f, want)
	}
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, nil)
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=up,") {
		t.Errorf("after a reply: %q", f)
	}
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, context.DeadlineExceeded)
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=down,") {
		t.Errorf("after a timeout: %q", f)
	}
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, context.Canceled)
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=down,") {
		t.Errorf("a canceled call changed the link: %q", f)
	}
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, backend.ServerError{Code: "READONLY", Text: "READONLY x"})
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=up,") {
		t.Errorf("a Redis error reply is an answer: %q", f)
	}
}

// nodeDone reports one call to backend i, named node, on its own.
func nodeDone(m *Metrics, i int, node, op string, d time.Duration, err error) {
	m.NodesDone(op, []quorum.NodeResult{{Index: i, Node: node, D: d, Err: err}})
}

// The link's age restarts only when its state changes.
func TestLinkSinceOnlyOnChange(t *testing.T) {
	m := New(Options{})
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, nil)
	n := m.node("a:1")
	n.mu.Lock()
	n.since = n.since.Add(-time.Hour) // as if up for an hour
	n.mu.Unlock()
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, nil)
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=up,link_since_s=3600,") {
		t.Errorf("a second reply restarted the link's age: %q", f)
	}
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, errors.New("boom"))
	if f := m.BackendFields("a:1"); !strings.Contains(f, ",link=down,link_since_s=0,") {
		t.Errorf("a failure kept the link's age: %q", f)
	}
}
