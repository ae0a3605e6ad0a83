package quorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

const opCAS = "CompareAndSwap"

// swapNodes returns one node per value, each an engine that runs the
// CompareAndSwap script, storing its value at "k" ("" for none).
func swapNodes(t *testing.T, vals ...string) ([]*faultnode.Node, []quorum.Node) {
	t.Helper()
	fs, nodes := newNodes(len(vals))
	for i, v := range vals {
		if v != "" {
			put(t, fs[i], "k", v, time.Minute)
		}
	}
	return fs, nodes
}

// swapValues is what each node stores at "k" ("" for nothing).
func swapValues(t *testing.T, fs []*faultnode.Node) []string {
	t.Helper()
	var out []string
	for _, f := range fs {
		out = append(out, peek(t, f, "k").token)
	}
	return out
}

// countSwaps counts the CompareAndSwap commands that f's engine carried
// out (answered OK); read it once the operation returned.
func countSwaps(f *faultnode.Node) func() int {
	var mu sync.Mutex
	n := 0
	f.OnReply(func(cmd quorum.Cmd, rep quorum.Reply) {
		if cmd.Kind == quorum.CompareAndSwap && rep.Err == nil && rep.OK {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestHandOverSwapsOnAMajority(t *testing.T) {
	fs, nodes := swapNodes(t, "old", "old", "other")
	c := newCluster(t, nodes, testConfig())
	l, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	if err != nil || l.Token != "new" || l.Validity <= 0 || l.Validity > time.Second {
		t.Fatalf("HandOver = %+v, %v; want the new lock", l, err)
	}
	waitAll(t, fs, opCAS, 1)
	if got := swapValues(t, fs); got[0] != "new" || got[1] != "new" || got[2] != "other" {
		t.Fatalf("nodes hold %v, want [new new other]", got)
	}
}

// TestHandOverFailedRoundSwapsBack: a failed hand-over swaps back where it
// swapped, also where the reply was lost (the swap landed), and leaves
// alone a node that refused.
func TestHandOverFailedRoundSwapsBack(t *testing.T) {
	fs, nodes := swapNodes(t, "old", "other", "old")
	fs[2].SetFault(faultnode.ReplyLost(errLost))
	refusedSwaps := countSwaps(fs[1])
	c := newCluster(t, nodes, testConfig())
	_, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	if !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("HandOver = %v, want ErrNotAcquired", err)
	}
	if got := swapValues(t, fs); got[0] != "old" || got[1] != "other" || got[2] != "old" {
		t.Fatalf("nodes hold %v after the failed hand-over, want [old other old]", got)
	}
	if n := refusedSwaps(); n != 0 {
		t.Fatalf("the node that refused was swapped %d times", n)
	}
}

func TestHandOverNoQuorumSwapsBack(t *testing.T) {
	fs, nodes := swapNodes(t, "old", "old", "old")
	fs[1].SetFault(errors.New("down"))
	fs[2].SetFault(errors.New("down"))
	swaps := countSwaps(fs[0])
	c := newCluster(t, nodes, testConfig())
	_, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	var nq *quorum.NoQuorumError
	if !errors.As(err, &nq) || nq.Answered != 1 {
		t.Fatalf("HandOver = %v, want NOQUORUM with 1 answer", err)
	}
	if got, n := peek(t, fs[0], "k").token, swaps(); got != "old" || n != 2 {
		t.Fatalf("node 0 holds %q after %d swaps, want old after the swap and its undo", got, n)
	}
}

func TestHandOverCallerGone(t *testing.T) {
	fs, nodes := swapNodes(t, "old", "old", "old")
	c := newCluster(t, nodes, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.HandOver(ctx, "k", "old", "new", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("HandOver with a cancelled caller = %v", err)
	}
	if got := swapValues(t, fs); got[0] != "old" || got[1] != "old" || got[2] != "old" {
		t.Fatalf("nodes hold %v, want old everywhere: nothing was started", got)
	}
	for _, f := range fs {
		if n := f.Calls(opCAS); n != 0 {
			t.Fatalf("%s was asked %d swaps, want none: nothing was started", f.Name(), n)
		}
	}
}
