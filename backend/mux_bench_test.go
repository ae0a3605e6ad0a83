package backend

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/redistest"
)

// BenchmarkSetNXParallel compares, side by side on one server, the node's
// multiplexed SET NX with go-redis's pool (one connection per command in
// flight), at 50 concurrent callers.
func BenchmarkSetNXParallel(b *testing.B) {
	srv := redistest.Start(b)
	r, err := NewRedis(srv.Addr(), RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ops := map[string]func(ctx context.Context, key string) error{
		"mux": func(ctx context.Context, key string) error {
			_, err := r.SetNX(ctx, key, "tok", time.Minute)
			return err
		},
		"go-redis": func(ctx context.Context, key string) error {
			return r.client.SetArgs(ctx, key, "tok", redisSetArgs).Err()
		},
	}
	for _, name := range []string{"mux", "go-redis"} {
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
