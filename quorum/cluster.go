package quorum

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Cluster runs Redlock operations over a fixed set of independent nodes.
// It is safe for concurrent use.
type Cluster struct {
	nodes   []Node
	async   []AsyncNode // the same nodes, when every one is an AsyncNode
	cfg     Config
	wake    *wakeRegistry
	health  *health
	pending *retrier
}

// New returns a Cluster over nodes. It does not wait for them; nodes that
// implement ServerWatcher or ReleaseNotifier start reporting to it in the
// background, until each node is closed. Close stops the retries of
// releases that did not reach a node (see Config.ReleaseRetry).
func New(nodes []Node, cfg Config) (*Cluster, error) {
	if len(nodes) == 0 {
		return nil, errors.New("quorum: no nodes")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{nodes: append([]Node(nil), nodes...), cfg: cfg, wake: newWakeRegistry()}
	c.async = asyncNodes(c.nodes)
	c.health = newHealth(c.nodes, cfg)
	c.pending = newRetrier(c.nodes, cfg)
	c.watchServers()
	c.watchReleases()
	return c, nil
}

// Nodes returns the cluster's nodes, in configuration order.
func (c *Cluster) Nodes() []Node { return append([]Node(nil), c.nodes...) }

// Quorum is the number of nodes that must agree.
func (c *Cluster) Quorum() int { return Quorum(len(c.nodes)) }

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }

// result is one node's answer within a fan-out.
type result[T any] struct {
	node int
	val  T
	err  error
}

// fanout calls op on every node concurrently, each under its own per-node
// deadline, and returns a channel that receives exactly one result per node.
// The channel is buffered to N, so a caller that stops reading early never
// strands a sender; every goroutine ends within the node timeout.
func fanout[T any](ctx context.Context, c *Cluster, op func(context.Context, Node) (T, error)) <-chan result[T] {
	out := make(chan result[T], len(c.nodes))
	// A node call is bounded by the node timeout alone: a client that
	// hangs up mid-round must not leave the round half done (a SET
	// abandoned on one node, a release skipped on another).
	detached := context.WithoutCancel(ctx)
	opName := c.opName(ctx)
	for i, n := range c.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(detached, c.cfg.NodeTimeout)
			defer cancel()
			t0 := time.Now()
			v, err := op(nctx, n)
			out <- nodeResult(c, opName, i, n, t0, v, err)
		}()
	}
	return out
}

// nodeResult reports one node's answer and turns it into its vote: the
// health veto is checked after the call, so that a restart meanwhile
// counts too, and an error names its node.
func nodeResult[T any](c *Cluster, op string, i int, n Node, t0 time.Time, v T, err error) result[T] {
	c.reportNode(op, n, t0, err)
	if err == nil {
		if err = c.health.veto(i); err != nil {
			var zero T
			v = zero
		}
	}
	if err != nil {
		err = &NodeError{Node: n.Name(), Err: err}
	}
	return result[T]{node: i, val: v, err: err}
}

// tally is the outcome of a yes/no vote over all nodes.
type tally struct {
	yes, no int
	errs    *multierror.Error
}

func (t *tally) add(yes bool, err error) {
	switch {
	case err != nil:
		t.errs = multierror.Append(t.errs, err)
	case yes:
		t.yes++
	default:
		t.no++
	}
}

func (t *tally) answered() int { return t.yes + t.no }

func (c *Cluster) noQuorum(t *tally) error {
	return &NoQuorumError{Answered: t.answered(), Total: len(c.nodes), Errs: t.errs}
}

// vote runs a boolean op on all nodes and waits for every answer (each is
// bounded by the node timeout).
func (c *Cluster) vote(ctx context.Context, op func(context.Context, Node) (bool, error)) tally {
	return c.voteWith(ctx, op, nil)
}

// cleanupCtx detaches from the caller's cancellation, so that a release
// after a failed or cancelled operation still reaches every node; each node
// call keeps its own timeout.
func cleanupCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
