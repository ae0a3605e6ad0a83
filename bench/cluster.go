package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The -cluster mode measures, in one run, redlockd over N=3 single
// redis-servers against redlockd over N=3 Redis Clusters of 3 masters
// each (cluster://): redis-benchmark's SET NX PX, plain and pipelined, and
// lock+unlock pairs of a go-redis client, interleaved. On one machine the
// clusters' nine masters share the CPUs with everything else, so this
// shows what cluster routing costs, not how it scales; RESULTS.md gives
// the expected scaling on separate machines and the reasoning.

// clusterShards is the number of masters of each benchmark cluster.
const clusterShards = 3

// clusterTarget is one side of the comparison: a proxy and its servers.
type clusterTarget struct {
	name    string
	backend []string // the --backends
	procs   []*redisProc
	proxy   *proxyProc
}

func (c *clusterTarget) target() target {
	t := target{addr: c.proxy.addr, pid: c.proxy.pid(), backends: c.procs}
	for _, p := range c.procs {
		t.servers = append(t.servers, p.addr)
	}
	return t
}

func (c *clusterTarget) stop() {
	if c.proxy != nil {
		c.proxy.stop()
	}
	for _, p := range c.procs {
		p.stop()
	}
}

// runCluster runs the comparison and prints it as markdown.
func runCluster(ctx context.Context, o options, log io.Writer) error {
	dir, err := os.MkdirTemp("", "redlockd-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.redlockd
	if bin == "" {
		if bin, err = buildRedlockd(dir); err != nil {
			return err
		}
	}
	sides, err := startSides(ctx, dir, bin, o)
	for _, s := range sides {
		defer s.stop()
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(log, describeMachine().String())
	set, err := clusterSetNX(ctx, o, sides)
	if err != nil {
		return err
	}
	pairs, err := clusterPairs(ctx, o, sides)
	if err != nil {
		return err
	}
	fmt.Fprint(log, clusterMarkdown(o, sides, set, pairs, clockTicks()))
	return nil
}

// startSides starts N=3 single servers and N=3 clusters, and a redlockd
// over each set.
func startSides(ctx context.Context, dir, bin string, o options) ([]*clusterTarget, error) {
	single := &clusterTarget{name: "N=3 single servers"}
	clusters := &clusterTarget{name: "N=3 clusters of 3 masters"}
	sides := []*clusterTarget{single, clusters}
	// The single servers start together: one started seconds after the
	// others would sit out the start-up quarantine.
	for i := range 3 {
		p, err := startRedis(mkdir(dir, fmt.Sprintf("single-%d", i)))
		if err != nil {
			return sides, err
		}
		single.procs, single.backend = append(single.procs, p), append(single.backend, p.addr)
	}
	for i := range 3 {
		masters, err := startBenchCluster(ctx, dir, i)
		clusters.procs = append(clusters.procs, masters...)
		if err != nil {
			return sides, err
		}
		clusters.backend = append(clusters.backend, "cluster://"+masters[0].addr)
	}
	for _, s := range sides {
		px, err := startProxy(bin, s.backend, "--node-timeout", o.nodeTimeout.String())
		if err != nil {
			return sides, err
		}
		s.proxy = px
	}
	return sides, nil
}

// startBenchCluster starts clusterShards masters, gives each an equal
// share of the slots, joins them and waits for cluster_state:ok.
func startBenchCluster(ctx context.Context, dir string, n int) ([]*redisProc, error) {
	var procs []*redisProc
	var buses []int
	for j := range clusterShards {
		bus, err := freePort()
		if err != nil {
			return procs, err
		}
		p, err := startRedis(mkdir(dir, fmt.Sprintf("cluster-%d-%d", n, j)), "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000", "--cluster-port", strconv.Itoa(bus))
		if err != nil {
			return procs, err
		}
		procs, buses = append(procs, p), append(buses, bus)
	}
	return procs, formCluster(ctx, procs, buses)
}

// formCluster assigns the slots and joins the masters (buses are their
// cluster bus ports).
func formCluster(ctx context.Context, procs []*redisProc, buses []int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(procs))
	for i, p := range procs {
		clients[i] = redis.NewClient(&redis.Options{Addr: p.addr, DisableIdentity: true})
		defer clients[i].Close()
		lo, hi := i*16384/len(procs), (i+1)*16384/len(procs)-1
		if err := clients[i].Do(ctx, "cluster", "addslotsrange", lo, hi).Err(); err != nil {
			return err
		}
	}
	for i, p := range procs[1:] {
		host, port, _ := strings.Cut(p.addr, ":")
		if err := clients[0].Do(ctx, "cluster", "meet", host, port, buses[i+1]).Err(); err != nil {
			return err
		}
	}
	for {
		ok := true
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			ok = ok && err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(procs)))
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster did not form: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
