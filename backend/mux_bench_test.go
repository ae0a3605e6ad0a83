package backend

import (
	"context"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// BenchmarkSetNXParallel compares, side by side on one server, the node's
// multiplexed SET NX with go-redis's pool (one connection per command in
// flight) and with go-redis's blocking auto-pipeliner (concurrent callers'
// commands batched into pipelines), at 50 concurrent callers.
func BenchmarkSetNXParallel(b *testing.B) {
	srv := redistest.Start(b)
	r, err := NewRedis(srv.Addr(), RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	pool := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true, PoolSize: 64})
	defer pool.Close()
	apClient := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer apClient.Close()
	ap, err := apClient.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	defer ap.Close()
	ops := map[string]func(ctx context.Context, key string) error{
		"mux": func(ctx context.Context, key string) error {
			_, err := nodetest.SetNX(ctx, r, key, "tok", time.Minute)
			return err
		},
		"go-redis": func(ctx context.Context, key string) error {
			return pool.SetArgs(ctx, key, "tok", redisSetArgs).Err()
		},
		"go-redis-autopipeline": func(ctx context.Context, key string) error {
			return ap.SetArgs(ctx, key, "tok", redisSetArgs).Err()
		},
	}
	for _, name := range []string{"mux", "go-redis", "go-redis-autopipeline"} {
		op := ops[name]
		b.Run(name, func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(25) // 50 goroutines on 2 CPUs
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					err := op(ctx, "k"+strconv.FormatInt(n.Add(1), 10))
					cancel()
					if err != nil && err.Error() != "redis: nil" {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

var redisSetArgs = redis.SetArgs{Mode: "NX", TTL: time.Minute}

// BenchmarkClusterAcquireRelease is a lock+unlock pair through a Cluster
// over three real servers, 50 callers: the fan-out submits straight to the
// multiplexer through Do.
func BenchmarkClusterAcquireRelease(b *testing.B) {
	var redises []*Redis
	for range 3 {
		srv := redistest.Start(b)
		r, err := NewRedis(srv.Addr(), RedisOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		redises = append(redises, r)
	}
	for _, mode := range []string{"async"} {
		b.Run(mode, func(b *testing.B) {
			nodes := make([]quorum.Node, len(redises))
			for i, r := range redises {
				nodes[i] = r
			}
			cfg := quorum.DefaultConfig()
			cfg.NodeTimeout = time.Second
			c, err := quorum.New(nodes, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var n atomic.Int64
			b.SetParallelism(25)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					key := "k" + strconv.FormatInt(n.Add(1), 10)
					tok := quorum.NewToken()
					if _, err := c.Acquire(ctx, key, tok, time.Minute); err != nil {
						b.Error(err)
						return
					}
					if ok, err := c.Release(ctx, key, tok); !ok || err != nil {
						b.Error(ok, err)
						return
					}
				}
			})
		})
	}
}
