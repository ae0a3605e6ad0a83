package quorum_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

const (
	wkey = "wake-key"
	// neverRetry is a jitter so long that only a wake-up can explain a
	// waiter acquiring within a test.
	neverRetry = time.Hour
	// prompt bounds "at once" generously: a loaded machine is slow, but
	// nowhere near neverRetry.
	prompt = 10 * time.Second
)

func memNodes(n int) []quorum.Node {
	nodes := make([]quorum.Node, n)
	for i := range nodes {
		nodes[i] = embedded.New("mem-" + string(rune('a'+i)))
	}
	return nodes
}

func slowRetryCluster(t *testing.T, nodes []quorum.Node) *quorum.Cluster {
	t.Helper()
	return slowRetryClusterTimeout(t, nodes, time.Second)
}

// slowRetryClusterTimeout is slowRetryCluster with a NodeTimeout of its own.
func slowRetryClusterTimeout(t *testing.T, nodes []quorum.Node, timeout time.Duration) *quorum.Cluster {
	t.Helper()
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = timeout
	cfg.RetryDelayMin, cfg.RetryDelayMax = neverRetry, neverRetry
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type acquired struct {
	l   quorum.Lock
	err error
}

// waitAsync starts AcquireWait and returns once it is registered as a
// waiter (polling the registry: an external condition of the goroutine).
func waitAsync(t *testing.T, c *quorum.Cluster, token string, wait time.Duration) <-chan acquired {
	t.Helper()
	before := c.Waiters(wkey)
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(context.Background(), wkey, token, time.Minute, quorum.Wait(wait))
		ch <- acquired{l, err}
	}()
	pollUntil(t, "waiter registered", func() bool { return c.Waiters(wkey) > before })
	return ch
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(prompt)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, ch <-chan acquired, within time.Duration) acquired {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(within):
		t.Fatalf("waiter did not return within %v", within)
		return acquired{}
	}
}

func mustAcquire(t *testing.T, c *quorum.Cluster, token string) {
	t.Helper()
	if _, err := c.Acquire(context.Background(), wkey, token, time.Minute); err != nil {
		t.Fatalf("Acquire(%s): %v", token, err)
	}
}

// hideNotify hides the releases a node announces: the Cluster over it
// hears only of its own releases.
type hideNotify struct{ quorum.Node }

func (h hideNotify) Watch(w quorum.Watcher) bool {
	w.Released = nil
	return h.Node.Watch(w)
}

func TestWaitWokenByRelease(t *testing.T) {
	releases := []struct {
		name    string
		release func(c *quorum.Cluster) error
	}{
		{"unlock", func(c *quorum.Cluster) error {
			ok, err := c.Release(context.Background(), wkey, "holder")
			if !ok && err == nil {
				err = errors.New("not released")
			}
			return err
		}},
		{"del", func(c *quorum.Cluster) error {
			_, err := c.Delete(context.Background(), wkey)
			return err
		}},
		{"release status", func(c *quorum.Cluster) error {
			_, err := c.ReleaseStatus(context.Background(), wkey, "holder")
			return err
		}},
	}
	for _, rel := range releases {
		for _, across := range []bool{false, true} {
			name := rel.name + "/same cluster"
			if across {
				name = rel.name + "/other cluster"
			}
			t.Run(name, func(t *testing.T) {
				nodes := memNodes(3)
				holder := slowRetryCluster(t, nodes)
				waiters := holder
				if across {
					waiters = slowRetryCluster(t, nodes)
				}
				mustAcquire(t, holder, "holder")
				res := waitAsync(t, waiters, "waiter", time.Hour)
				if err := rel.release(holder); err != nil {
					t.Fatal(err)
				}
				if a := recv(t, res, prompt); a.err != nil || a.l.Token != "waiter" {
					t.Fatalf("waiter got %+v, %v; want the lock", a.l, a.err)
				}
			})
		}
	}
}

// TestWaitNotWokenWithoutNotification is the negative control of the test
// above: when the release cannot be heard (another cluster, nodes that do
// not notify), the waiter sits out its whole wait.
func TestWaitNotWokenWithoutNotification(t *testing.T) {
	nodes := memNodes(3)
	hidden := make([]quorum.Node, len(nodes))
	for i, n := range nodes {
		hidden[i] = hideNotify{n}
	}
	holder := slowRetryCluster(t, hidden)
	waiters := slowRetryCluster(t, hidden)
	mustAcquire(t, holder, "holder")
	res := waitAsync(t, waiters, "waiter", 300*time.Millisecond)
	if ok, err := holder.Release(context.Background(), wkey, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if a := recv(t, res, prompt); !errors.Is(a.err, quorum.ErrNotAcquired) {
		t.Fatalf("unwoken waiter got %+v, %v; want ErrNotAcquired at the end of its wait", a.l, a.err)
	}
}

func TestWaitersServedInArrivalOrder(t *testing.T) {
	nodes := memNodes(3)
	c := slowRetryCluster(t, nodes)
	mustAcquire(t, c, "holder")
	first := waitAsync(t, c, "first", time.Hour)
	second := waitAsync(t, c, "second", time.Hour)

	if ok, err := c.Release(context.Background(), wkey, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if a := recv(t, first, prompt); a.err != nil {
		t.Fatalf("first waiter: %v", a.err)
	}
	select {
	case a := <-second:
		t.Fatalf("second waiter returned %+v, %v while the first holds the lock", a.l, a.err)
	default:
	}
	if ok, err := c.Release(context.Background(), wkey, "first"); !ok || err != nil {
		t.Fatalf("Release(first) = %v, %v", ok, err)
	}
	if a := recv(t, second, prompt); a.err != nil || a.l.Token != "second" {
		t.Fatalf("second waiter got %+v, %v", a.l, a.err)
	}
	if n := c.Waiters(wkey); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}

// TestWaitGivesUpAtDeadline: a wake-up never stretches WAIT. The waiter is
// woken again and again while the key stays held (the test sends the
// release notices itself, a notice being a hint, never a vote), each wake
// costing it a refused round; it still gives up at the end of its wait.
// Its retry pause is an hour, so only the deadline can end it.
func TestWaitGivesUpAtDeadline(t *testing.T) {
	nodes := memNodes(3)
	holder := slowRetryCluster(t, nodes)
	mustAcquire(t, holder, "holder")
	var rounds atomic.Int64 // the waiter's commands on its first node
	var notices notices
	wrapped := make([]quorum.Node, len(nodes))
	for i, n := range nodes {
		h := &nodetest.Hooked{Node: n}
		if i == 0 {
			h.After = func(quorum.Cmd, *quorum.Reply) { rounds.Add(1) }
		}
		wrapped[i] = notices.wrap(h)
	}
	waiters := slowRetryCluster(t, wrapped)
	res := waitAsync(t, waiters, "waiter", 300*time.Millisecond)
	stop := make(chan struct{})
	pumped := make(chan struct{})
	t.Cleanup(func() { close(stop); <-pumped })
	go func() { // a notice after each round the last one caused
		defer close(pumped)
		for {
			seen := rounds.Load()
			notices.send(wkey)
			for rounds.Load() == seen {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}()
	a := recv(t, res, prompt)
	if !errors.Is(a.err, quorum.ErrNotAcquired) {
		t.Fatalf("AcquireWait = %+v, %v, want ErrNotAcquired", a.l, a.err)
	}
	if n := rounds.Load(); n < 3 {
		t.Fatalf("the waiter ran %d rounds: no wake-up reached it", n)
	}
	if n := waiters.Waiters(wkey); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}

// notices keeps the release callbacks of the nodes it wraps, so that a test
// can announce a release that never happened.
type notices struct {
	mu       sync.Mutex
	released []func(db int, key string)
}

func (n *notices) wrap(node quorum.Node) quorum.Node { return noticeNode{node, n} }

func (n *notices) send(key string) {
	n.mu.Lock()
	fs := slices.Clone(n.released)
	n.mu.Unlock()
	for _, f := range fs {
		f(0, key)
	}
}

type noticeNode struct {
	quorum.Node
	n *notices
}

func (w noticeNode) Watch(x quorum.Watcher) bool {
	if x.Released != nil {
		w.n.mu.Lock()
		w.n.released = append(w.n.released, x.Released)
		w.n.mu.Unlock()
	}
	return w.Node.Watch(x)
}
