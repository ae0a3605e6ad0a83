package quorum

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// swapNode is a node that runs CompareAndSwap on a map; with lose set it
// swaps and then loses its reply (the write landed, the answer did not
// come back); with fail it answers an error without swapping.
type swapNode struct {
	name       string
	mu         sync.Mutex
	vals       map[string]string
	lose, fail bool
	swaps      int
}

func (n *swapNode) Name() string            { return n.name }
func (n *swapNode) Watch(Watcher) bool      { return false }
func (n *swapNode) Close() error            { return nil }
func (n *swapNode) value(key string) string { n.mu.Lock(); defer n.mu.Unlock(); return n.vals[key] }

func (n *swapNode) Do(_ time.Time, cmd Cmd, r Receiver) {
	if cmd.Kind != CompareAndSwap {
		r.Receive(Reply{Err: errors.New("not modelled")})
		return
	}
	n.mu.Lock()
	if n.fail {
		n.mu.Unlock()
		r.Receive(Reply{Err: errors.New("down")})
		return
	}
	rep := Reply{N: -1}
	if v, ok := n.vals[cmd.Key]; ok {
		rep.N = 0
		if v == cmd.Old {
			n.vals[cmd.Key], rep = cmd.Token, Reply{OK: true, N: 1}
			n.swaps++
		}
	}
	lose := n.lose
	n.mu.Unlock()
	if lose {
		rep = Reply{Err: errors.New("reply lost")}
	}
	r.Receive(rep)
}

func swapNodes(vals ...string) ([]*swapNode, []Node) {
	var sn []*swapNode
	var nodes []Node
	for i, v := range vals {
		n := &swapNode{name: "s" + string(rune('0'+i)), vals: map[string]string{}}
		if v != "" {
			n.vals["k"] = v
		}
		sn, nodes = append(sn, n), append(nodes, n)
	}
	return sn, nodes
}

func swapValues(sn []*swapNode) []string {
	var out []string
	for _, n := range sn {
		out = append(out, n.value("k"))
	}
	return out
}

func TestHandOverSwapsOnAMajority(t *testing.T) {
	sn, nodes := swapNodes("old", "old", "other")
	c := newCluster(t, nodes, testConfig())
	l, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	if err != nil || l.Token != "new" || l.Validity <= 0 || l.Validity > time.Second {
		t.Fatalf("HandOver = %+v, %v; want the new lock", l, err)
	}
	if got := swapValues(sn); got[0] != "new" || got[1] != "new" || got[2] != "other" {
		t.Fatalf("nodes hold %v, want [new new other]", got)
	}
}

// TestHandOverFailedRoundSwapsBack: a failed hand-over swaps back where it
// swapped, also where the reply was lost (the swap landed), and leaves
// alone a node that refused.
func TestHandOverFailedRoundSwapsBack(t *testing.T) {
	sn, nodes := swapNodes("old", "other", "old")
	sn[2].lose = true
	c := newCluster(t, nodes, testConfig())
	_, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("HandOver = %v, want ErrNotAcquired", err)
	}
	if got := swapValues(sn); got[0] != "old" || got[1] != "other" || got[2] != "old" {
		t.Fatalf("nodes hold %v after the failed hand-over, want [old other old]", got)
	}
	if sn[1].swaps != 0 {
		t.Fatalf("the node that refused was swapped %d times", sn[1].swaps)
	}
}

func TestHandOverNoQuorumSwapsBack(t *testing.T) {
	sn, nodes := swapNodes("old", "old", "old")
	sn[1].fail, sn[2].fail = true, true
	c := newCluster(t, nodes, testConfig())
	_, err := c.HandOver(context.Background(), "k", "old", "new", time.Second)
	var nq *NoQuorumError
	if !errors.As(err, &nq) || nq.Answered != 1 {
		t.Fatalf("HandOver = %v, want NOQUORUM with 1 answer", err)
	}
	if got := sn[0].value("k"); got != "old" || sn[0].swaps != 2 {
		t.Fatalf("node 0 holds %q after %d swaps, want old after the swap and its undo", got, sn[0].swaps)
	}
}

func TestHandOverCallerGone(t *testing.T) {
	sn, nodes := swapNodes("old", "old", "old")
	c := newCluster(t, nodes, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.HandOver(ctx, "k", "old", "new", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("HandOver with a cancelled caller = %v", err)
	}
	if got := swapValues(sn); got[0] != "old" || got[1] != "old" || got[2] != "old" {
		t.Fatalf("nodes hold %v, want old everywhere: nothing was started", got)
	}
}
