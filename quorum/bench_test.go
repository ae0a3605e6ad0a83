package quorum_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

// BenchmarkAcquireRelease is the engine's own cost per lock+unlock over
// in-memory nodes (no network), with -benchmem showing what each pair
// allocates.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			nodes := make([]quorum.Node, n)
			for i := range nodes {
				nodes[i] = embedded.New("mem-" + strconv.Itoa(i))
			}
			// The engine's cost is measured, not the timeout: a busy
			// machine's stall past the default 50 ms would fail the run.
			cfg := quorum.DefaultConfig()
			cfg.NodeTimeout = 10 * time.Second
			c, err := quorum.New(nodes, cfg)
			if err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					key := "k" + strconv.FormatInt(seq.Add(1), 10)
					tok := quorum.NewToken()
					if _, err := c.Acquire(ctx, key, tok, 10*time.Second); err != nil {
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

func BenchmarkNewToken(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = quorum.NewToken()
	}
}
