package quorum

import (
	"context"
	"time"
)

// AsyncNode is an optional Node extension for nodes that can start a call
// and report its answer later, without a goroutine or a context per call.
// When every node of a Cluster implements it, the hot operations (acquire,
// extend, release, get) start each node's call from the caller's goroutine
// and collect the answers as they come; otherwise each node call runs on a
// goroutine of its own, under a context with the node timeout.
//
// Each method must call done exactly once, from any goroutine, possibly
// before it returns; done does not block. The node enforces deadline
// itself: an answer it has not had by then is an error that matches
// context.DeadlineExceeded, reported soon after deadline. The answers and
// errors are those of the Node method of the same name.
//
// A type that embeds an AsyncNode and overrides its Node methods (a test
// double, a wrapper adding faults or metrics) must override these too, or
// hide them: the Cluster calls these instead of the Node methods.
type AsyncNode interface {
	Node
	SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error))
	// CompareAndDeleteAsync is CompareAndDelete; with notify, it is
	// ReleaseNotifier's CompareAndDeleteNotify where the node is one.
	CompareAndDeleteAsync(deadline time.Time, key, token string, notify bool, done func(bool, error))
	CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error))
	GetAsync(deadline time.Time, key string, done func(token string, pttl time.Duration, ok bool, err error))
}

// asyncOp starts node i's call of one fan-out; done receives its answer.
type asyncOp[T any] func(i int, n AsyncNode, deadline time.Time, done func(T, error))

// asyncNodes returns nodes as AsyncNodes, or nil unless every one is.
func asyncNodes(nodes []Node) []AsyncNode {
	out := make([]AsyncNode, len(nodes))
	for i, n := range nodes {
		an, ok := n.(AsyncNode)
		if !ok {
			return nil
		}
		out[i] = an
	}
	return out
}

// fanoutWith is fanout that uses aop when every node is an AsyncNode.
func fanoutWith[T any](ctx context.Context, c *Cluster, op func(context.Context, Node) (T, error), aop asyncOp[T]) <-chan result[T] {
	if c.async == nil || aop == nil {
		return fanout(ctx, c, op)
	}
	return fanoutAsync(ctx, c, aop)
}

// fanoutAsync is fanout over AsyncNodes: the same per-node deadline (one
// for the round), the same health veto after each answer, the same
// NodeDone report, and a channel buffered to N that receives exactly one
// result per node. The calls ignore ctx's cancellation, as fanout's do: a
// client that hangs up mid-round must not leave the round half done.
func fanoutAsync[T any](ctx context.Context, c *Cluster, aop asyncOp[T]) <-chan result[T] {
	out := make(chan result[T], len(c.async))
	op := c.opName(ctx)
	t0 := time.Now()
	deadline := t0.Add(c.cfg.NodeTimeout)
	for i, n := range c.async {
		aop(i, n, deadline, func(v T, err error) {
			out <- nodeResult(c, op, i, n, t0, v, err)
		})
	}
	return out
}

// voteWith is vote that uses aop when every node is an AsyncNode.
func (c *Cluster) voteWith(ctx context.Context, op func(context.Context, Node) (bool, error), aop asyncOp[bool]) tally {
	var t tally
	ch := fanoutWith(ctx, c, op, aop)
	for range c.nodes {
		r := <-ch
		t.add(r.val, r.err)
	}
	return t
}

// releaseOnAsync is releaseOn for an AsyncNode.
func (c *Cluster) releaseOnAsync(i int, n AsyncNode, deadline time.Time, key, token string, ttl time.Duration, notify bool, done func(bool, error)) {
	n.CompareAndDeleteAsync(deadline, key, token, notify, func(ok bool, err error) {
		if err != nil {
			c.pending.add(i, key, token, ttl, false)
		}
		done(ok, err)
	})
}
