package metrics

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
	m.CommandDone("set", "acquired", time.Millisecond, nil)
	round := results(nodes, 300*time.Microsecond)
	// The same backends at each other's indexes: found by name.
	swapped := results(nodes, 300*time.Microsecond)
	swapped[0].Node, swapped[2].Node = swapped[2].Node, swapped[0].Node
	withRound := &quorum.Report{Op: quorum.OpAcquire, Outcome: quorum.OutcomeOK, D: time.Millisecond,
		Validity: 9 * time.Second, TTL: 10 * time.Second, Calls: round}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"NodesDone", func() { m.NodesDone(quorum.OpAcquire, round) }},
		{"NodesDone by name", func() { m.NodesDone(quorum.OpAcquire, swapped) }},
		{"OpDone", func() {
			m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
		}},
		{"CommandDone", func() { m.CommandDone("set", "acquired", time.Millisecond, nil) }},
		{"CommandDone with its round", func() { m.CommandDone("set", "acquired", time.Millisecond, withRound) }},
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

// A call counts for its own backend and operation whether its figures are
// found by the backend's index or by name: where the index is another
// backend's, or the operation is past the indexed columns.
func TestNodesDoneByIndexAndName(t *testing.T) {
	m := New(Options{Backends: []string{"a:1", "b:1"}, Logger: discardLogger()})
	one := func(i int, node, op string) {
		m.NodesDone(op, []quorum.NodeResult{{Index: i, Node: node, D: time.Millisecond}})
	}
	m.NodesDone(quorum.OpAcquire, []quorum.NodeResult{
		{Index: 0, Node: "a:1", D: time.Millisecond}, {Index: 1, Node: "b:1", D: time.Millisecond}})
	one(0, "b:1", quorum.OpAcquire)
	one(1, "b:1", quorum.OpAcquire)
	one(2, "c:1", quorum.OpAcquire) // an index first seen
	one(2, "c:1", quorum.OpAcquire)
	one(-1, "c:1", quorum.OpAcquire)
	const ops = opColumns + 4
	for k := range ops {
		one(1, "b:1", fmt.Sprintf("op%d", k))
	}
	for node, calls := range map[string]int{"a:1": 1, "b:1": 3 + ops, "c:1": 3} {
		if f := m.BackendFields(node); !strings.Contains(f, fmt.Sprintf(",calls=%d,", calls)) {
			t.Errorf("%s: %q, want %d calls", node, f, calls)
		}
	}
	want := map[labelPair]uint64{{"a:1", quorum.OpAcquire}: 1, {"b:1", quorum.OpAcquire}: 3, {"c:1", quorum.OpAcquire}: 3}
	for k := range ops {
		want[labelPair{"b:1", fmt.Sprintf("op%d", k)}] = 1
	}
	indexed := *m.nodes.indexed.Load()
	col := m.nodes.column(quorum.OpAcquire)
	for _, c := range []struct {
		i       int
		node    string
		indexed bool
	}{{0, "a:1", true}, {1, "b:1", true}, {2, "c:1", true}, {0, "b:1", false}} {
		if got := indexedCall(indexed, c.i, c.node, col) != nil; got != c.indexed {
			t.Errorf("%s at %d: indexed %v, want %v", c.node, c.i, got, c.indexed)
		}
	}
	got := backendSamples(t, m)
	if len(got) != len(want) {
		t.Errorf("%d latency series, want %d: %v", len(got), len(want), got)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s within %s: %d samples, want %d", k.a, k.b, got[k], n)
		}
	}
}

// backendSamples is the sample count of every backend latency series, by
// (backend, op).
func backendSamples(t *testing.T, m *Metrics) map[labelPair]uint64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[labelPair]uint64{}
	for _, f := range fams {
		if f.GetName() != NameBackendSeconds {
			continue
		}
		for _, s := range f.GetMetric() {
			var k labelPair
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case "backend":
					k.a = l.GetValue()
				case "op":
					k.b = l.GetValue()
				}
			}
			got[k] = s.GetHistogram().GetSampleCount()
		}
	}
	return got
}

// A command reported with its quorum operation (CommandDone's round)
// moves the same series, by the same amounts, as the command and its
// operation reported apart (CommandDone, NodesDone and OpDone).
func TestCommandDoneWithRound(t *testing.T) {
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	calls := results(nodes, 300*time.Microsecond)
	calls[2].Err = context.DeadlineExceeded
	reports := []quorum.Report{
		{Op: quorum.OpAcquire, Outcome: quorum.OutcomeOK, D: 2 * time.Millisecond, Validity: 9 * time.Second, TTL: 10 * time.Second, Calls: calls},
		{Op: quorum.OpRelease, Outcome: quorum.OutcomeContended, D: time.Millisecond, Calls: calls[:2]},
		{Op: quorum.OpAcquire, Outcome: quorum.OutcomeError, TTL: -time.Second}, // no round made
	}
	apart, together := New(Options{Backends: nodes}), New(Options{Backends: nodes})
	for _, r := range reports {
		if len(r.Calls) > 0 {
			apart.NodesDone(r.Op, r.Calls)
		}
		apart.OpDone(r.Op, r.Outcome, r.D, r.Validity, r.TTL)
		apart.CommandDone("set", "acquired", 3*time.Millisecond, nil)
		together.CommandDone("set", "acquired", 3*time.Millisecond, &r)
	}
	want, got := families(t, apart), families(t, together)
	for _, name := range []string{NameCommands, NameCommandSeconds, NameOperations, NameOperationSeconds,
		NameValidityRatio, NameBackendSeconds, NameBackendErrors, NameBackendChanges} {
		if want[name] == "" {
			t.Errorf("%s: no series", name)
		}
		if got[name] != want[name] {
			t.Errorf("%s with the round in CommandDone:\n%s\nwant, as reported apart:\n%s", name, got[name], want[name])
		}
	}
}

var created = regexp.MustCompile(`created_timestamp:\{[^}]*\}`)

// families is the text of each family m's registry gathers, by name,
// without the series' creation times.
func families(t *testing.T, m *Metrics) map[string]string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, mf := range mfs {
		out[mf.GetName()] = created.ReplaceAllString(mf.String(), "")
	}
	return out
}
