package metrics

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkObserve is what the binary pays per lock command for metrics:
// one command, one quorum operation and three node calls.
func BenchmarkObserve(b *testing.B) {
	m := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	timeout := errors.New("i/o timeout")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			for j, n := range nodes {
				var err error
				if i%100 == 0 && j == 2 {
					err = timeout
				}
				m.NodeDone(n, "acquire", 300*time.Microsecond, err)
			}
			m.OpDone("acquire", "ok", time.Millisecond, 9*time.Second, 10*time.Second)
			m.CommandDone("set", "acquired", time.Millisecond)
			i++
		}
	})
}
