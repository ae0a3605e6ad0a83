package compat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// startOverClusters serves redlockd over three Redis Clusters of three
// masters each, every cluster one node of the quorum (cluster://).
func startOverClusters(t *testing.T) *instance {
	t.Helper()
	clusters := make([]*redistest.Cluster, 3)
	for i := range clusters {
		clusters[i] = redistest.StartCluster(t, 3, 0)
	}
	return &instance{redlocktest.StartOverClusters(t, clusters, harnessOptions)}
}

// Unchanged clients, one scenario each, through redlockd over three
// cluster nodes: go-redis (RESP3 and RESP2, its lock idioms and a
// pipeline), redsync, rueidis (cached reads invalidated), redis-cli and
// redis-py. The keys spread over the
// clusters' shards; the backends hold each lock on the master of its
// slot.
func TestClientsOverClusterNodes(t *testing.T) {
	in := startOverClusters(t)
	t.Run("go-redis", func(t *testing.T) {
		for _, protocol := range []int{0, 2} {
			c := in.Client(t, protocol)
			goRedisHello(t, c, protocol)
			goRedisLock(t, in, c, "gr:cluster:lock")
			goRedisSetNX(t, in, c, "gr:cluster:setnx")
			goRedisPipeline(t, c, "gr:cluster:pipe")
		}
	})
	t.Run("redsync", func(t *testing.T) { redsyncOverClusters(t, in) })
	// Each master of each cluster reports its own slots' changes.
	t.Run("rueidis", func(t *testing.T) { rueidisScenario(t, in.Addr, in.Addr, 3) })
	t.Run("redis-cli", func(t *testing.T) {
		cli := lookTool(t, "redis-cli", "apt-get install redis-tools")
		ctx := testCtx(t)
		fields := strings.Fields(in.redisCLI(t, ctx, cli, "LOCK", "cli:cluster", "10000"))
		if len(fields) != 2 {
			t.Fatalf("LOCK printed %q, want a token and a validity", fields)
		}
		if out := strings.TrimSpace(in.redisCLI(t, ctx, cli, "GET", "cli:cluster")); out != fields[0] {
			t.Fatalf("GET = %q, want %q", out, fields[0])
		}
		if out := strings.TrimSpace(in.redisCLI(t, ctx, cli, "EVAL", compareAndDeleteBody, "1", "cli:cluster", fields[0])); out != "1" {
			t.Fatalf("EVAL compare-and-delete = %q, want 1", out)
		}
		if out := in.redisCLI(t, ctx, cli, "INFO", "backends"); strings.Count(out, "_shard") != 9 {
			t.Fatalf("INFO backends shows %d shards, want 9:\n%s", strings.Count(out, "_shard"), out)
		}
	})
	t.Run("redis-py", func(t *testing.T) {
		py := lookTool(t, python, "apt-get install python3-redis")
		out := runTool(t, testCtx(t), "python", in.Addr, py, "lock_test.py", "suite", "basic")
		wantLines(t, out, "ok acquire", "ok second-lock-refused", "ok extend", "ok reacquire",
			"ok release", "ok not-owner-refused", "PASS")
	})
}

// redsyncOverClusters: redsync's lock, refusal, extend and unlock, its
// scripts replicated over the cluster nodes.
func redsyncOverClusters(t *testing.T, in *instance) {
	ctx := testCtx(t)
	rs := redsync.New(goredis.NewPool(in.Client(t, 0)))
	const name = "redsync:cluster"
	m := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if n := redlocktest.Count(in.BackendValues(t, name), m.Value()); n < 2 {
		t.Fatalf("token on %d cluster nodes, want a majority", n)
	}
	other := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(2),
		redsync.WithRetryDelay(10*time.Millisecond))
	var taken *redsync.ErrTaken
	if err := other.LockContext(ctx); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
		t.Fatalf("second mutex Lock: err = %v, want ErrFailed or ErrTaken", err)
	}
	if ok, err := m.ExtendContext(ctx); err != nil || !ok {
		t.Fatalf("Extend = %v, %v; want true", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("Unlock = %v, %v; want true", ok, err)
	}
	if n := redlocktest.Count(in.BackendValues(t, name), "<nil>"); n != 3 {
		t.Fatalf("after Unlock the key is absent on %d cluster nodes, want 3", n)
	}
}
