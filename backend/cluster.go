package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockd/redlockd/internal/slot"
	"github.com/redlockd/redlockd/quorum"
)

// Cluster is a quorum.Node backed by one Redis Cluster: a key's vote comes
// from the master that serves the key's slot. Each master is reached
// through a Redis node of its own (its multiplexer, scripts and watch), so
// a batch of commands leaves as one write per shard. The topology comes
// from CLUSTER NODES, read at start, every health interval, and after a
// MOVED; MOVED and ASK are followed within the command's deadline.
type Cluster struct {
	name  string
	base  *redis.Options // credentials and TLS every master is reached with
	opts  RedisOptions
	seeds []string
	topo  atomic.Pointer[topology]
	// pubsub is the node of the first seed: the clients' subscriptions
	// and the release channel live there (a cluster delivers a PUBLISH on
	// any node to every node).
	pubsub *Redis

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	reportMu sync.Mutex // serializes the reports to the watcher

	mu         sync.Mutex
	closed     bool
	nodes      map[string]*Redis // by address; kept until Close
	groupOf    map[string]string // node id → shard name
	watcher    *quorum.Watcher   // set by Watch
	invalids   []func([]string)  // every master reports its changed keys to these
	looks      map[string]quorum.ServerInfo
	refresh    chan struct{} // closed when the refresh in flight ends; nil when none
	lastRef    time.Time
	refreshErr error // the last refresh's
	// named is every server a topology read ever named, masters and
	// replicas: seeds for the next reads (see readTopology).
	named []string

	// asked is the connection the topology was last read on from a
	// server that has no node here (a seed that is not a master); only
	// the refresh in flight uses it, and Close closes it once none can
	// run.
	asked *seedConn
}

// seedConn is a kept connection to the server at addr.
type seedConn struct {
	addr string
	h    healthConn
}

var _ quorum.Node = (*Cluster)(nil)

// topology is one reading of the cluster's slots. It is never changed
// once published; a change publishes a new one.
type topology struct {
	slots  [slot.Count]*shard // nil: no master serves the slot
	shards []*shard
}

// shard is one master and the slots it serves.
type shard struct {
	addr  string
	group string // the shard's name, kept across failovers
	first int    // the first slot it serves: where its horizon lives
	node  *Redis
}

var (
	// ErrClusterDB is the error of a command on a database other than 0:
	// a Redis Cluster has no other.
	ErrClusterDB = errors.New("backend: a Redis Cluster has database 0 only")
	// errCrossSlot is Redis Cluster's own answer to a command whose keys
	// are in different slots.
	errCrossSlot    error = ServerError{Code: "CROSSSLOT", Text: "CROSSSLOT Keys in request don't hash to the same slot"}
	errNoTopology         = errors.New("backend: cluster topology not known yet")
	errSlotUnserved       = errors.New("backend: no master serves the slot")
)

// NewCluster makes the node of cluster://host:port[?seed=host:port…] or
// clusters://… (TLS), with optional user:password@ as in redis:// URLs.
// It checks the address but does not dial.
func NewCluster(addr string, opts RedisOptions) (*Cluster, error) {
	base, seeds, err := parseClusterAddr(addr, opts.TLSConfig)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "cluster://" + seeds[0]
	}
	cl := &Cluster{name: name, base: base, opts: opts, seeds: seeds,
		nodes: map[string]*Redis{}, groupOf: map[string]string{}, looks: map[string]quorum.ServerInfo{}}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	cl.pubsub = cl.nodeLocked(seeds[0])
	return cl, nil
}

// IsClusterAddr tells whether addr names a Redis Cluster.
func IsClusterAddr(addr string) bool {
	return strings.HasPrefix(addr, "cluster://") || strings.HasPrefix(addr, "clusters://")
}

func parseClusterAddr(addr string, tlsConf *tls.Config) (*redis.Options, []string, error) {
	scheme, rest, _ := strings.Cut(addr, "://")
	rest, query, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, nil, fmt.Errorf("backend: bad cluster URL query: %w", err)
	}
	for k := range q {
		if k != "seed" {
			return nil, nil, fmt.Errorf("backend: bad cluster URL: unknown option %q (only seed=host:port)", k)
		}
	}
	plain := map[string]string{"cluster": "redis", "clusters": "rediss"}[scheme]
	if strings.Contains(strings.TrimPrefix(rest, "/"), "/") {
		return nil, nil, errors.New("backend: bad cluster URL: a Redis Cluster has database 0 only")
	}
	o, err := parseAddr(plain+"://"+rest, tlsConf)
	if err != nil {
		return nil, nil, err
	}
	seeds := append([]string{o.Addr}, q["seed"]...)
	for _, s := range seeds[1:] {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, nil, fmt.Errorf("backend: bad cluster seed %q: %w", s, err)
		}
	}
	return o, seeds, nil
}

// Name implements quorum.Node.
func (cl *Cluster) Name() string { return cl.name }

// Close stops the refreshes and closes every master's node. Safe to call
// twice.
func (cl *Cluster) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	cl.cancel()
	nodes := cl.nodes
	cl.mu.Unlock()
	cl.wg.Wait()
	if cl.asked != nil {
		cl.asked.h.close()
	}
	for _, n := range nodes {
		n.Close()
	}
	return nil
}

// nodeLocked returns the node of a master's address, made on first use
// (and watched at once when the cluster is).
func (cl *Cluster) nodeLocked(addr string) *Redis {
	if n := cl.nodes[addr]; n != nil {
		return n
	}
	opts := cl.opts
	opts.Name = cl.name + "/" + addr
	n := newRedisFrom(cl.optionsAt(addr), opts)
	cl.nodes[addr] = n
	if cl.watcher != nil {
		cl.watchNodeLocked(addr, n)
	}
	return n
}

// optionsAt is how the server at addr is reached: the URL's credentials
// and TLS, whose host names the certificate (a cluster's servers share
// one, as they share the credentials).
func (cl *Cluster) optionsAt(addr string) *redis.Options {
	o := *cl.base
	o.Addr = addr
	if o.TLSConfig != nil {
		o.TLSConfig = o.TLSConfig.Clone()
	}
	return &o
}
