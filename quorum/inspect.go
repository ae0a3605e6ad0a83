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
	// ErrReply is the node's error reply about the key (a value of
	// another type: "WRONGTYPE …"); PTTL is then its remaining ttl.
	ErrReply string
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
	done := c.begin(OpInspect)
	t0 := c.cfg.Now()
	r, _, err := c.collectCtx(ctx, OpInspect, same(Cmd{Kind: Get, Key: key}), okVote)
	in := Inspection{Nodes: make([]NodeView, len(c.nodes)), Quorum: c.Quorum()}
	for i := range in.Nodes {
		rep := r.replyOr(i, err)
		in.Nodes[i] = NodeView{Node: c.nodes[i].Name(), Present: rep.OK, Token: rep.Token, PTTL: rep.TTL, ErrReply: rep.ErrReply, Err: rep.Err}
		if rep.Err == nil {
			in.Answered++
		}
	}
	if in.HasQuorum() {
		in.Holder = r.holder(in.Quorum, c.cfg.Now().Sub(t0))
	}
	if !in.HasQuorum() && err == nil {
		err = ErrNoQuorum
	}
	done(err, 0, 0)
	return in
}
