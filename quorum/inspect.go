package quorum

import (
	"context"
	"time"
)

// NodeView is what one node says about a key.
type NodeView struct {
	Node string
	// Present is true when the node stores the key.
	Present bool
	Token   string
	// PTTL is the node's remaining ttl; negative when it has none.
	PTTL time.Duration
	// Err is the node's failure (a *NodeError); nil when it answered.
	Err error
}

// Inspection is every node's view of a key and the verdict a quorum read
// would reach from them. It is for troubleshooting (LOCKINFO) and for
// health checks: it changes nothing on the nodes.
type Inspection struct {
	// Nodes holds one view per node, in configuration order.
	Nodes []NodeView
	// Answered counts the nodes that replied (Err == nil).
	Answered int
	Quorum   int
	// Holder is the majority's verdict; meaningful only when HasQuorum.
	Holder Holder
}

// HasQuorum reports whether enough nodes answered to decide.
func (in Inspection) HasQuorum() bool { return in.Answered >= in.Quorum }

// Inspect reads key on every node, concurrently and under the node timeout
// like any other operation, and keeps each node's answer.
func (c *Cluster) Inspect(ctx context.Context, key string) Inspection {
	ctx, done := c.begin(ctx, OpInspect)
	t0 := c.cfg.Now()
	ch := fanout(ctx, c, func(ctx context.Context, n Node) (view, error) {
		tok, pttl, ok, err := n.Get(ctx, key)
		return view{tok, pttl, ok}, err
	})
	in := Inspection{Nodes: make([]NodeView, len(c.nodes)), Quorum: c.Quorum()}
	var present []view
	for range c.nodes {
		r := <-ch
		in.Nodes[r.node] = NodeView{Node: c.nodes[r.node].Name(), Present: r.val.ok,
			Token: r.val.token, PTTL: r.val.pttl, Err: r.err}
		if r.err == nil {
			in.Answered++
			if r.val.ok {
				present = append(present, r.val)
			}
		}
	}
	if in.HasQuorum() {
		in.Holder = majorityHolder(present, in.Quorum, c.cfg.Now().Sub(t0))
	}
	var err error
	if !in.HasQuorum() {
		err = ErrNoQuorum
	}
	done(err, 0, 0)
	return in
}
