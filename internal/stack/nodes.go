package stack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// startupCheckTimeout bounds the start-up look at each backend; it is
// longer than the node timeout because it includes dialing.
const startupCheckTimeout = 2 * time.Second

// openNodes returns the given nodes, the embedded ones, or one Redis node
// per backend. A backend that does not answer is logged, not fatal: a
// majority may be up.
func openNodes(ctx context.Context, cfg Config) ([]quorum.Node, error) {
	if len(cfg.Nodes) > 0 {
		return cfg.Nodes, nil
	}
	if len(cfg.Backends) == 0 {
		cfg.Logger.Warn("embedded mode: no fault tolerance, for trying it out",
			"hint", "pass --backends host:port,host:port,host:port for real Redis masters")
		return []quorum.Node{
			backend.NewMemory("embedded-1"), backend.NewMemory("embedded-2"), backend.NewMemory("embedded-3"),
		}, nil
	}
	nodes := make([]quorum.Node, 0, len(cfg.Backends))
	for _, addr := range cfg.Backends {
		r, err := backend.NewRedis(addr, backend.RedisOptions{TLSConfig: cfg.BackendTLS})
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("invalid --backends %q: %v", addr, err)
		}
		nodes = append(nodes, r)
	}
	if err := checkBackends(ctx, nodes, cfg.Logger); err != nil {
		closeNodes(nodes)
		return nil, err
	}
	return nodes, nil
}

func closeNodes(nodes []quorum.Node) {
	for _, n := range nodes {
		n.Close()
	}
}

// backendInfo is what start-up learns about one backend.
type backendInfo struct {
	name, runID, role string
	replicas          int
	err               error
}

// checkBackends looks at every backend concurrently. Unreachable ones are
// logged; two addresses of one server, or a replica, are refused, since
// either would let one failure count twice in a vote.
func checkBackends(ctx context.Context, nodes []quorum.Node, log *slog.Logger) error {
	infos := probeAll(ctx, nodes)
	seen := map[string]string{}
	up := 0
	for _, in := range infos {
		if in.err != nil {
			log.Warn("backend unreachable at start-up; it votes no until it answers", "backend", in.name, "err", in.err)
			continue
		}
		up++
		if other, dup := seen[in.runID]; dup {
			return fmt.Errorf("invalid --backends: %s and %s are the same server (run_id %s)", other, in.name, in.runID)
		}
		seen[in.runID] = in.name
		if in.role != "master" {
			return fmt.Errorf("invalid --backends: %s is a %s, not an independent master", in.name, in.role)
		}
		if in.replicas > 0 {
			log.Warn("backend has replicas attached; Redlock needs no replication", "backend", in.name, "replicas", in.replicas)
		}
	}
	if q := quorum.Quorum(len(nodes)); up < q {
		log.Warn("fewer backends than a quorum answered at start-up; locks fail until enough come up", "up", up, "quorum", q)
	}
	return nil
}

func probeAll(ctx context.Context, nodes []quorum.Node) []backendInfo {
	ctx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	infos := make([]backendInfo, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { infos[i] = probe(ctx, n) })
	}
	wg.Wait()
	return infos
}

func probe(ctx context.Context, n quorum.Node) backendInfo {
	in := backendInfo{name: n.Name()}
	r, ok := n.(*backend.Redis)
	if !ok {
		in.role = "master"
		return in
	}
	if in.runID, in.err = r.RunID(ctx); in.err != nil {
		return in
	}
	in.role, in.replicas, in.err = r.Role(ctx)
	return in
}
