package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// startupCheckTimeout bounds the wait for the first look at each backend;
// it is longer than the node timeout because it includes dialing.
const startupCheckTimeout = 2 * time.Second

// openNodes returns the given nodes, the embedded ones, or one Redis node
// per backend; New checks the backends once the cluster watches them.
func openNodes(ctx context.Context, cfg Config) ([]quorum.Node, error) {
	if len(cfg.Nodes) > 0 {
		return cfg.Nodes, nil
	}
	if len(cfg.Backends) == 0 {
		cfg.Logger.Warn("embedded mode: no fault tolerance, for trying it out",
			"hint", "pass --backends host:port,host:port,host:port for real Redis masters")
		return []quorum.Node{
			embedded.New("embedded-1"), embedded.New("embedded-2"), embedded.New("embedded-3"),
		}, nil
	}
	nodes := make([]quorum.Node, 0, len(cfg.Backends))
	for _, addr := range cfg.Backends {
		n, err := openNode(addr, backend.RedisOptions{TLSConfig: cfg.BackendTLS, NodeTimeout: cfg.NodeTimeout})
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("invalid --backends %q: %v", addr, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// openNode is one backend: a Redis Cluster (cluster://, clusters://) or
// one server.
func openNode(addr string, opts backend.RedisOptions) (quorum.Node, error) {
	if backend.IsClusterAddr(addr) {
		return backend.NewCluster(addr, opts)
	}
	return backend.NewRedis(addr, opts)
}

func closeNodes(nodes []quorum.Node) {
	for _, n := range nodes {
		n.Close()
	}
}

// looked tells whether a node's state comes from a look at its server:
// it answered, or the look failed. An unwatched node (in memory) has
// nothing to look at.
func looked(st quorum.NodeState) bool {
	return !st.Watched || st.Up || st.RunID != "" || st.LastError != ""
}

// firstLooks waits, bounded by startupCheckTimeout and ctx, until each
// node's watcher has reported a first look, and returns the states then.
// The looks are the cluster's own: the ones its votes and /readyz follow.
func firstLooks(ctx context.Context, cluster *quorum.Cluster) []quorum.NodeState {
	ctx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		states := cluster.NodeStates()
		if !slices.ContainsFunc(states, func(st quorum.NodeState) bool { return !looked(st) }) {
			return states
		}
		select {
		case <-ctx.Done():
			return states
		case <-t.C:
		}
	}
}

// checkBackends refuses two addresses of one server, and a replica, since
// either would let one failure count twice in a vote; unreachable
// backends are logged. It reads what the cluster's first looks found.
func checkBackends(ctx context.Context, cluster *quorum.Cluster, log *slog.Logger) error {
	states := firstLooks(ctx, cluster)
	up := 0
	for i, st := range states {
		if !st.Up {
			log.Warn("backend unreachable at start-up; it votes no until it answers", "backend", st.Name, "err", lookError(st))
			continue
		}
		up++
		for _, o := range states[:i] {
			if id := sharedRunID(o, st); id != "" {
				return fmt.Errorf("invalid --backends: %s and %s are the same server (run_id %s)", o.Name, st.Name, id)
			}
		}
		if st.Replica {
			return fmt.Errorf("invalid --backends: %s is a replica, not an independent master", st.Name)
		}
	}
	if q := quorum.Quorum(len(states)); up < q {
		log.Warn("fewer backends than a quorum answered at start-up; locks fail until enough come up", "up", up, "quorum", q)
	}
	return nil
}

func lookError(st quorum.NodeState) string {
	if st.LastError == "" {
		return "no answer within " + startupCheckTimeout.String()
	}
	return st.LastError
}

// sharedRunID is a server that both nodes reach (a Redis Cluster reaches
// its shards' masters), or "".
func sharedRunID(a, b quorum.NodeState) string {
	ids := b.RunIDs()
	for _, id := range a.RunIDs() {
		if id != "" && slices.Contains(ids, id) {
			return id
		}
	}
	return ""
}
