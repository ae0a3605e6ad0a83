package quorum

import (
	"errors"
	"time"
)

// Cluster runs Redlock operations over a fixed set of independent nodes.
// It is safe for concurrent use.
type Cluster struct {
	nodes   []Node
	cfg     Config
	wake    *wakeRegistry
	health  *health
	pending *retrier
	// horizons keeps every node's lock horizon (see HorizonKey).
	horizons *horizons
}

// New returns a Cluster over nodes. It does not wait for them; each node
// starts reporting to it (looks at its server, announced releases) in the
// background, until the node is closed. Close stops the retries of
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
	c.horizons = newHorizons(c.nodes, cfg)
	c.health = newHealth(c.nodes, cfg)
	c.health.hz = c.horizons
	c.health.readHorizons = c.readHorizons
	c.pending = newRetrier(c.nodes, cfg)
	c.watch()
	return c, nil
}

// Nodes returns the cluster's nodes, in configuration order.
func (c *Cluster) Nodes() []Node { return append([]Node(nil), c.nodes...) }

// Quorum is the number of nodes that must agree.
func (c *Cluster) Quorum() int { return Quorum(len(c.nodes)) }

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }
