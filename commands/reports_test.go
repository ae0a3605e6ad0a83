package commands

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// countingObserver notes the metric reports it is given, as the metrics
// are given them: it is both the command table's Observer and the
// cluster's. A command's report names its round's operation, outcome and
// number of calls, and whether the command's done had been called by then.
type countingObserver struct {
	mu      sync.Mutex
	reports []string
	done    chan struct{} // the command's done, when one is watched
	more    chan struct{} // buffered 1: a report came
}

func newCountingObserver() *countingObserver {
	return &countingObserver{more: make(chan struct{}, 1)}
}

func (o *countingObserver) note(s string) {
	o.mu.Lock()
	o.reports = append(o.reports, s)
	o.mu.Unlock()
	select {
	case o.more <- struct{}{}:
	default:
	}
}

// take returns the reports so far and forgets them.
func (o *countingObserver) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.reports
	o.reports = nil
	return r
}

// await waits for a first report, then returns the reports so far.
func (o *countingObserver) await(t *testing.T) []string {
	t.Helper()
	for {
		o.mu.Lock()
		n := len(o.reports)
		o.mu.Unlock()
		if n > 0 {
			return o.take()
		}
		select {
		case <-o.more:
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
		}
	}
}

// watch is a new done channel for the next command: its report says
// whether it came before or after the channel closed.
func (o *countingObserver) watch() chan struct{} {
	done := make(chan struct{})
	o.mu.Lock()
	o.done = done
	o.mu.Unlock()
	return done
}

// startReply runs words with Start on s and waits until it is done: its
// reply, or false where words has no asynchronous form.
func startReply(t *testing.T, h *Handler, s *Session, words ...string) (string, bool) {
	t.Helper()
	var r recorder
	if !startWait(t, h, s, words, &r, make(chan struct{})) {
		return "", false
	}
	return r.String(), true
}

// startWait runs words with Start on s, replying to w, and waits until
// it is done (closing done): false where words has no asynchronous form.
func startWait(t *testing.T, h *Handler, s *Session, words []string, w Writer, done chan struct{}) bool {
	t.Helper()
	if !h.Start(s, NewRequest(byteArgs(words)), w, func() { close(done) }) {
		return false
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%v: not done", words)
	}
	return true
}

func (o *countingObserver) CommandDone(cmd, outcome string, _ time.Duration, round *quorum.Report) {
	s := "CommandDone " + cmd + "/" + outcome
	if round != nil {
		s += fmt.Sprintf(" round=%s/%s calls=%d", round.Op, round.Outcome, len(round.Calls))
	}
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	if done != nil {
		select {
		case <-done:
			s += " after done"
		default:
			s += " before done"
		}
	}
	o.note(s)
}

func (o *countingObserver) NodesDone(op string, calls []quorum.NodeResult) {
	o.note(fmt.Sprintf("NodesDone %s calls=%d", op, len(calls)))
}

func (o *countingObserver) OpDone(op, outcome string, _, _, _ time.Duration) {
	o.note("OpDone " + op + "/" + outcome)
}

// reportsHandler is a Handler over three in-memory nodes whose command
// table and cluster both report to obs; the last node can be held up
// (for less than the node timeout).
func reportsHandler(t *testing.T, obs *countingObserver) (*Handler, *Session, *faultnode.Node) {
	t.Helper()
	var nodes []quorum.Node
	var last *faultnode.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		last = faultnode.Wrap(embedded.New(n))
		nodes = append(nodes, last)
	}
	cfg := quorum.DefaultConfig()
	cfg.Observer = obs
	cfg.NodeTimeout = 5 * time.Second // a held-up node answers, late, rather than fails
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	h := New(cl, Options{Observer: obs})
	s := h.NewSession("127.0.0.1:1")
	t.Cleanup(func() { h.CloseSession(s) })
	return h, s, last
}

// A request that Start runs is reported once, before its done, its
// quorum round in the command's report; only the calls its round
// answered after its outcome (here the node an acquire asks once a
// majority granted it) are reported on their own, to the cluster's
// Observer. Run's reports are unchanged: the command, and the cluster's
// reports of its operation.
func TestReportsPerRequest(t *testing.T) {
	obs := newCountingObserver()
	h, s, _ := reportsHandler(t, obs)
	for _, tc := range []struct {
		words []string
		start []string
	}{
		{[]string{"SET", "k", "tok", "NX", "PX", "10000"}, []string{
			"CommandDone set/acquired round=acquire/ok calls=2 before done", "NodesDone acquire calls=1"}},
		{[]string{"SET", "k", "other", "NX", "PX", "10000"}, []string{
			"CommandDone set/contended round=acquire/contended calls=3 before done"}},
		{[]string{"EVALSHA", sha1Hex(cadScript), "1", "k", "tok"}, []string{
			"CommandDone evalsha/ok round=release/ok calls=3 before done"}},
		{[]string{"LOCK", "k", "10000", "TOKEN", "tok"}, []string{
			"CommandDone lock/acquired round=acquire/ok calls=2 before done", "NodesDone acquire calls=1"}},
		{[]string{"RENEW", "k", "tok", "10000"}, []string{
			"CommandDone renew/ok round=extend/ok calls=3 before done"}},
		{[]string{"EVALSHA", sha1Hex(redsyncTouch), "1", "k", "tok", "10000"}, []string{
			"CommandDone evalsha/ok round=extend/ok calls=3 before done"}},
		{[]string{"RENEW", "k", "other", "10000"}, []string{
			"CommandDone renew/contended round=extend/contended calls=3 before done"}},
		{[]string{"UNLOCK", "k", "tok"}, []string{
			"CommandDone unlock/ok round=release/ok calls=3 before done"}},
		{[]string{"UNLOCK", "k", "tok"}, []string{
			"CommandDone unlock/contended round=release/contended calls=3 before done"}},
		{[]string{"SET", "k", "tok", "NX", "PX", "x"}, []string{
			"CommandDone set/error before done"}},
	} {
		// The in-memory nodes answer at once: every report is made
		// before Start returns.
		if !startWait(t, h, s, tc.words, new(recorder), obs.watch()) {
			t.Fatalf("%v has no asynchronous form", tc.words)
		}
		if got := obs.take(); !slices.Equal(got, tc.start) {
			t.Errorf("Start %v: reports %q, want %q", tc.words, got, tc.start)
		}
	}

	obs.mu.Lock()
	obs.done = nil
	obs.mu.Unlock()
	h.Exec(s, byteArgs([]string{"SET", "k", "tok", "NX", "PX", "10000"}), new(recorder))
	got := obs.take()
	slices.Sort(got)
	want := []string{"CommandDone set/acquired", "NodesDone acquire calls=3", "OpDone acquire/ok"}
	if !slices.Equal(got, want) {
		t.Errorf("Exec of SET NX PX: reports %q, want %q", got, want)
	}
}

// A command's report does not wait for a slow node: an acquire that a
// majority granted is reported before its done with the calls answered
// by then, the slow node's call later on its own; a release awaits every
// reply, so its report has every call.
func TestReportDoesNotAwaitASlowNode(t *testing.T) {
	obs := newCountingObserver()
	h, s, slow := reportsHandler(t, obs)
	slow.SetDelay(50 * time.Millisecond)
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"SET", "k", "tok", "NX", "PX", "10000"}, []string{
			"CommandDone set/acquired round=acquire/ok calls=2 before done", "NodesDone acquire calls=1"}},
		{[]string{"UNLOCK", "k", "tok"}, []string{
			"CommandDone unlock/ok round=release/ok calls=3 before done"}},
	} {
		if !startWait(t, h, s, tc.words, new(recorder), obs.watch()) {
			t.Fatalf("%v has no asynchronous form", tc.words)
		}
		got := obs.await(t)
		for len(got) < len(tc.want) {
			got = append(got, obs.await(t)...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Start %v: reports %q, want %q", tc.words, got, tc.want)
		}
	}
}

// A LOCK whose rounds go on past its acquire (FENCE, KEEPALIVE) or that
// runs an operation of its own (OWNER, PERMITS) is reported by Start as
// Run reports it: the command, and the cluster's reports of each of its
// operations and rounds. Its acquire round is not the command's: the
// command ends after that round's report is gone.
func TestStartedLockOptionsReportAsRun(t *testing.T) {
	obs := newCountingObserver()
	h, s, _ := reportsHandler(t, obs)
	obs.mu.Lock()
	obs.done = nil
	obs.mu.Unlock()
	for _, opts := range [][]string{
		{"FENCE"}, {"KEEPALIVE"}, {"FENCE", "KEEPALIVE"}, {"SHARED", "FENCE"},
		{"OWNER", "me"}, {"OWNER", "me", "FENCE"}, {"PERMITS", "2"}, {"PERMITS", "2", "FENCE"},
	} {
		var reports [2][]string
		for i, key := range []string{"started", "run"} {
			words := append([]string{"LOCK", key, "10000"}, opts...)
			var r recorder
			if i == 0 {
				if !startWait(t, h, s, words, &r, make(chan struct{})) {
					t.Fatalf("%v has no asynchronous form", words)
				}
			} else {
				h.Exec(s, byteArgs(words), &r)
			}
			reports[i] = obs.take()
			slices.Sort(reports[i])
			tok := strings.TrimPrefix(strings.Fields(strings.Trim(r.String(), "[]"))[0], "$")
			h.Exec(s, byteArgs([]string{"UNLOCK", key, tok}), new(recorder))
			obs.take()
		}
		if !slices.Equal(reports[0], reports[1]) {
			t.Errorf("LOCK … %v: Start reports %q, Run %q", opts, reports[0], reports[1])
		}
	}
}
