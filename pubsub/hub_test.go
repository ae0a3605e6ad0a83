package pubsub

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// recorder is a Subscriber that keeps what it got.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) Deliver(m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m.Pattern+"|"+m.Channel+"|"+m.Payload)
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// clock is a settable time for the dedup window.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func memNodes(t *testing.T, n int) []quorum.Node {
	t.Helper()
	var nodes []quorum.Node
	for i := range n {
		m := embedded.New(fmt.Sprintf("m%d", i+1))
		t.Cleanup(func() { m.Close() })
		nodes = append(nodes, m)
	}
	return nodes
}

// clusterOf is a Cluster over nodes, as a proxy makes one.
func clusterOf(t *testing.T, nodes []quorum.Node) *quorum.Cluster {
	t.Helper()
	c, err := quorum.New(nodes, quorum.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// publishOn publishes directly on one node, as a script run there does.
func publishOn(t *testing.T, n quorum.Node, channel, payload string) {
	t.Helper()
	if r := quorum.Call(context.Background(), n, quorum.Cmd{Kind: quorum.Publish, Key: channel, Token: payload}); r.Err != nil {
		t.Fatal(r.Err)
	}
}

func TestHubDeliversEachMessageOnce(t *testing.T) {
	nodes := memNodes(t, 3)
	clk := &clock{now: time.Unix(1000, 0)}
	h := New(clusterOf(t, nodes), Options{Window: time.Second, Now: clk.Now})
	var r recorder
	h.Subscribe(context.Background(), Topic{Name: "ch"}, &r)
	h.Subscribe(context.Background(), Topic{Pattern: true, Name: "c*"}, &r)

	n, err := h.Publish(context.Background(), "ch", "once")
	if err != nil || n != 2 {
		t.Fatalf("Publish = %d, %v; want 2 (a channel and a pattern subscription on each node)", n, err)
	}
	for _, nd := range nodes { // a replicated script publishes once per node
		publishOn(t, nd, "ch", "script")
	}
	publishOn(t, nodes[0], "ch", "same node twice")
	publishOn(t, nodes[0], "ch", "same node twice")
	publishOn(t, nodes[1], "ch", "late copy")
	clk.add(2 * time.Second) // past the window: another copy is a new message
	publishOn(t, nodes[2], "ch", "late copy")

	want := []string{
		"|ch|once", "c*|ch|once", "|ch|script", "c*|ch|script",
		"|ch|same node twice", "c*|ch|same node twice", "|ch|same node twice", "c*|ch|same node twice",
		"|ch|late copy", "c*|ch|late copy", "|ch|late copy", "c*|ch|late copy",
	}
	if got := r.messages(); !slices.Equal(got, want) {
		t.Errorf("delivered\n %q\nwant\n %q", got, want)
	}
}

// Two hubs over the same nodes are two proxies: a message published
// through one reaches the other's subscribers once.
func TestHubTwoProxies(t *testing.T) {
	nodes := memNodes(t, 3)
	a, b := New(clusterOf(t, nodes), Options{}), New(clusterOf(t, nodes), Options{})
	var r recorder
	a.Subscribe(context.Background(), Topic{Name: "ch"}, &r)
	if n, err := b.Publish(context.Background(), "ch", "from b"); err != nil || n != 1 {
		t.Fatalf("Publish through b = %d, %v; want 1", n, err)
	}
	if got := r.messages(); !slices.Equal(got, []string{"|ch|from b"}) {
		t.Errorf("a's subscriber got %q", got)
	}
}

// The last Unsubscribe of a topic unsubscribes the nodes; PUBSUB's counts
// follow the subscribers.
func TestHubUnsubscribe(t *testing.T) {
	nodes := memNodes(t, 3)
	h := New(clusterOf(t, nodes), Options{})
	var r1, r2 recorder
	ch := Topic{Name: "ch"}
	h.Subscribe(context.Background(), ch, &r1)
	h.Subscribe(context.Background(), ch, &r2)
	h.Subscribe(context.Background(), Topic{Pattern: true, Name: "x*"}, &r2)
	if n, p, c := h.NumSub("ch"), h.NumPat(), h.Channels("c*"); n != 2 || p != 1 || !slices.Equal(c, []string{"ch"}) {
		t.Fatalf("NumSub %d NumPat %d Channels %q", n, p, c)
	}
	h.Unsubscribe(ch, &r1)
	h.Unsubscribe(ch, &r1) // twice: nothing more
	if n, _ := h.Publish(context.Background(), "ch", "m"); n != 1 {
		t.Errorf("after one of two unsubscribed, Publish = %d, want 1", n)
	}
	h.Unsubscribe(ch, &r2)
	if n, _ := h.Publish(context.Background(), "ch", "m"); n != 0 {
		t.Errorf("after the last unsubscribed, Publish = %d, want 0: the nodes are still subscribed", n)
	}
	if got := r1.messages(); len(got) != 0 {
		t.Errorf("an unsubscribed subscriber got %q", got)
	}
}

// The dedup state stays within MaxSeen messages however many arrive.
func TestDedupBounded(t *testing.T) {
	d := newDedup(time.Hour, 100, 3)
	now := time.Unix(0, 0)
	for i := range 10000 {
		if !d.first(keyOf("ch", "", fmt.Sprint(i)), 0, now) {
			t.Fatalf("message %d taken for a copy", i)
		}
		if len(d.order) > 100 || len(d.byKey) > 100 {
			t.Fatalf("after %d messages: %d remembered", i+1, len(d.order))
		}
	}
}

// Publish fails only when no node took the message.
func TestHubPublishNoNode(t *testing.T) {
	nodes := memNodes(t, 2)
	down := make([]*faultnode.Node, len(nodes))
	for i, n := range nodes {
		down[i] = faultnode.Wrap(n)
		down[i].SetFault(fmt.Errorf("down"))
		nodes[i] = down[i]
	}
	h := New(clusterOf(t, nodes), Options{})
	if _, err := h.Publish(context.Background(), "ch", "m"); err == nil {
		t.Fatal("Publish with every node down: no error")
	}
	down[1].SetFault(nil)
	if _, err := h.Publish(context.Background(), "ch", "m"); err != nil {
		t.Fatalf("Publish with one node up: %v", err)
	}
}
