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

// markingCluster is three nodes, each storing holder at key (none for
// ""), and for each a record of the wait marks that the SetNX commands
// it answered carried.
func markingCluster(t *testing.T, holder string) ([]*faultnode.Node, []func() []time.Duration) {
	t.Helper()
	fs, _ := newNodes(3)
	marked := make([]func() []time.Duration, len(fs))
	for i, f := range fs {
		if holder != "" {
			put(t, f, key, holder, time.Minute)
		}
		var mu sync.Mutex
		var marks []time.Duration
		f.OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
			if cmd.Kind == quorum.SetNX && cmd.Add > 0 {
				mu.Lock()
				marks = append(marks, cmd.Add)
				mu.Unlock()
			}
		})
		marked[i] = func() []time.Duration {
			f.WaitAnswered(t, opSetNX, f.Calls(opSetNX))
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Duration(nil), marks...)
		}
	}
	return fs, marked
}

func clusterOfMarking(t *testing.T, fs []*faultnode.Node, cfg quorum.Config) *quorum.Cluster {
	t.Helper()
	nodes := make([]quorum.Node, len(fs))
	for i, f := range fs {
		nodes[i] = f
	}
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAcquireWaitMarksOnlyWhenRefused: an uncontended blocking acquire
// marks nothing; a refused one marks in a second round at once (not after
// its hour of jitter), for no longer than its wait.
func TestAcquireWaitMarksOnlyWhenRefused(t *testing.T) {
	cfg := testConfig()
	cfg.RetryDelayMin, cfg.RetryDelayMax = time.Hour, time.Hour

	free, freeMarks := markingCluster(t, "")
	if _, err := clusterOfMarking(t, free, cfg).Acquire(context.Background(), key, mine, ttl, quorum.Wait(time.Minute)); err != nil {
		t.Fatalf("uncontended AcquireWait: %v", err)
	}
	for i, m := range free {
		if got := freeMarks[i](); len(got) != 0 {
			t.Errorf("%s marked %v for an uncontended acquire", m.Name(), got)
		}
	}

	held, heldMarks := markingCluster(t, other)
	const wait = 300 * time.Millisecond
	_, err := clusterOfMarking(t, held, cfg).Acquire(context.Background(), key, mine, ttl, quorum.Wait(wait))
	if !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("AcquireWait behind a holder = %v, want ErrNotAcquired", err)
	}
	for i, m := range held {
		got := heldMarks[i]()
		if len(got) != 1 || got[0] <= 0 || got[0] > wait {
			t.Errorf("%s marks = %v, want one in (0, %v]", m.Name(), got, wait)
		}
		if n := m.Calls(opSetNX); n != 2 {
			t.Errorf("%s ran %d SET NX, want 2 (the plain round, then the marked one)", m.Name(), n)
		}
	}
}
