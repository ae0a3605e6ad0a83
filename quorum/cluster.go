package quorum

import (
	"errors"
	"reflect"
	"time"
)

// Cluster runs Redlock operations over a fixed set of independent nodes.
// It is safe for concurrent use.
//
// A Cluster works in one database of its nodes (SELECT's index): New's
// works in database 0, and DB returns the same Cluster working in another.
// The views share everything (nodes, health, waiters, pending releases);
// only the database their rounds stamp on each Cmd differs.
type Cluster struct {
	nodes []Node
	cfg   Config
	// realClock: cfg.Now is time.Now, so a round's launch time (read for
	// its deadline) is also the start of its validity.
	realClock bool
	wake      *wakeRegistry
	health    *health
	pending   *retrier
	db        int
	views     []*Cluster // views[n] works in database n; shared by all views
	// horizons keeps every node's lock horizon (see HorizonKey); shared
	// by all views.
	horizons *horizons
	// holders are the nodes that can hold writes back (see HoldWrites),
	// found once here rather than per batch.
	holders []WriteHolder
}

// DBs is the number of databases a Cluster works in: SELECT 0 to 15, as
// a default redis-server has.
const DBs = 16

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
	// Function values do not compare; their code pointers do.
	realClock := reflect.ValueOf(cfg.Now).Pointer() == reflect.ValueOf(time.Now).Pointer()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{nodes: append([]Node(nil), nodes...), cfg: cfg, realClock: realClock, wake: newWakeRegistry()}
	c.horizons = newHorizons(c.nodes, cfg)
	c.horizons.atIsNow = realClock
	c.health = newHealth(c.nodes, cfg)
	c.health.hz = c.horizons
	c.health.readHorizons = c.readHorizons
	c.pending = newRetrier(c.nodes, cfg)
	c.holders = writeHolders(c.nodes)
	c.views = make([]*Cluster, DBs)
	for n := range c.views {
		v := *c
		v.db = n
		c.views[n] = &v
	}
	c.views[0] = c
	c.watch()
	return c, nil
}

// DB returns the Cluster working in database n, 0 <= n < DBs (the caller
// checks n, as SELECT does). It is made once, in New: picking it costs
// nothing per call.
func (c *Cluster) DB(n int) *Cluster { return c.views[n] }

// Index is the database the Cluster works in.
func (c *Cluster) Index() int { return c.db }

// Nodes returns the cluster's nodes, in configuration order.
func (c *Cluster) Nodes() []Node { return append([]Node(nil), c.nodes...) }

// Quorum is the number of nodes that must agree.
func (c *Cluster) Quorum() int { return Quorum(len(c.nodes)) }

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }
