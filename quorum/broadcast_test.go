package quorum_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// TestBroadcastRepliesInNodeOrder: Broadcast asks every node, and hands
// back each node's reply in configuration order, an error named by its
// node; a nil then is allowed.
func TestBroadcastRepliesInNodeOrder(t *testing.T) {
	nodes := memNodes(3)
	down := faultnode.Wrap(nodes[1])
	down.SetFault(errors.New("down"))
	nodes[1] = down
	c := slowRetryCluster(t, nodes)
	defer c.Close()
	sub := quorum.Cmd{Kind: quorum.Subscribe, Key: "ch"}
	c.Broadcast(quorum.OpPubSub, sub, nil)
	got := make(chan []quorum.Reply, 1)
	c.Broadcast(quorum.OpPubSub, quorum.Cmd{Kind: quorum.Publish, Key: "ch", Token: "m"}, func(r []quorum.Reply) { got <- r })
	reps := <-got
	if len(reps) != 3 {
		t.Fatalf("%d replies, want 3", len(reps))
	}
	for _, i := range []int{0, 2} {
		if reps[i].Err != nil || !reps[i].OK {
			t.Errorf("node %d: %+v, want a publish", i, reps[i])
		}
	}
	var ne *quorum.NodeError
	if !errors.As(reps[1].Err, &ne) || !strings.Contains(ne.Node, "mem-b") {
		t.Errorf("node 1: %v, want its error named by the node", reps[1].Err)
	}
}
