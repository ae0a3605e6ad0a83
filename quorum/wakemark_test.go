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

// markingNode is a node that records each wait mark it is asked for.
type markingNode struct {
	*faultnode.Node
	mu    sync.Mutex
	marks []time.Duration
}

// Do records the wait mark of every SetNX that carries one.
func (m *markingNode) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind == quorum.SetNX && cmd.Add > 0 {
		m.mu.Lock()
		m.marks = append(m.marks, cmd.Add)
		m.mu.Unlock()
	}
	m.Node.Do(deadline, cmd, r)
}

func (m *markingNode) marked() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.marks...)
}

func markingCluster(t *testing.T, holder string) []*markingNode {
	t.Helper()
	fs, _ := newNodes(3)
	ms := make([]*markingNode, len(fs))
	for i, f := range fs {
		if holder != "" {
			put(t, f, key, holder, time.Minute)
		}
		ms[i] = &markingNode{Node: f}
	}
	return ms
}

func clusterOfMarking(t *testing.T, ms []*markingNode, cfg quorum.Config) *quorum.Cluster {
	t.Helper()
	nodes := make([]quorum.Node, len(ms))
	for i, m := range ms {
		nodes[i] = m
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

	free := markingCluster(t, "")
	if _, err := clusterOfMarking(t, free, cfg).Acquire(context.Background(), key, mine, ttl, quorum.Wait(time.Minute)); err != nil {
		t.Fatalf("uncontended AcquireWait: %v", err)
	}
	for _, m := range free {
		if got := m.marked(); len(got) != 0 {
			t.Errorf("%s marked %v for an uncontended acquire", m.Name(), got)
		}
	}

	held := markingCluster(t, other)
	const wait = 300 * time.Millisecond
	_, err := clusterOfMarking(t, held, cfg).Acquire(context.Background(), key, mine, ttl, quorum.Wait(wait))
	if !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("AcquireWait behind a holder = %v, want ErrNotAcquired", err)
	}
	for _, m := range held {
		got := m.marked()
		if len(got) != 1 || got[0] <= 0 || got[0] > wait {
			t.Errorf("%s marks = %v, want one in (0, %v]", m.Name(), got, wait)
		}
		if n := m.Calls(opSetNX); n != 2 {
			t.Errorf("%s ran %d SET NX, want 2 (the plain round, then the marked one)", m.Name(), n)
		}
	}
}
