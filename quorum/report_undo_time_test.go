package quorum_test

import (
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// durationReporter keeps a report's duration.
type durationReporter struct{ d time.Duration }

func (r *durationReporter) RoundDone(rep *quorum.Report) { r.d = rep.D }

// TestRefusedAcquireReportLastsThroughItsUndo: an acquire that one node
// granted and a majority refused reports its outcome once the grant is
// undone, and its report's duration covers that undo too, as the caller
// waited for it; not only the replies of the acquire itself.
func TestRefusedAcquireReportLastsThroughItsUndo(t *testing.T) {
	const undoDelay = 300 * time.Millisecond
	fs := make([]*faultnode.Node, 3)
	nodes := make([]quorum.Node, 3)
	for i := range fs {
		fs[i] = faultnode.Wrap(embedded.New(string(rune('a' + i))))
		nodes[i] = fs[i]
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 5 * time.Second
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, n := range nodes[1:] {
		one, err := quorum.New([]quorum.Node{n}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = one.Acquire(t.Context(), "k", "other", time.Minute)
		one.Close()
		if err != nil {
			t.Fatalf("holding k on %s: %v", n.Name(), err)
		}
	}
	fs[0].SetOpDelay("CompareAndDelete", undoDelay)
	rp := &durationReporter{}
	done := make(chan error, 1)
	t0 := time.Now()
	c.AcquireAsync(rp, quorum.SetNX, "k", "tok", time.Second, func(_ quorum.Lock, err error) { done <- err })
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("acquired k, which two of three nodes hold for another token")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome")
	}
	waited := time.Since(t0)
	if waited < undoDelay {
		t.Fatalf("the outcome came after %v, before the undo's delay of %v", waited, undoDelay)
	}
	if rp.d < undoDelay {
		t.Errorf("report's duration %v; the caller waited %v, through an undo delayed %v", rp.d, waited, undoDelay)
	}
}
