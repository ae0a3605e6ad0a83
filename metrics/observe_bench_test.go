package metrics

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// warmMetrics is a Metrics whose three backends and the acquire series
// have each been reported once, as they are after the first lock.
func warmMetrics() (*Metrics, []string) {
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	m := New(Options{Backends: nodes, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, n := range nodes {
		m.NodeDone(n, quorum.OpAcquire, time.Millisecond, nil)
	}
	m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
	return m, nodes
}

// BenchmarkNodeDone is one backend reply reported, one goroutine at a time
// and from every core at once as the backends' readers report.
func BenchmarkNodeDone(b *testing.B) {
	m, nodes := warmMetrics()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.NodeDone(nodes[i%len(nodes)], quorum.OpAcquire, 300*time.Microsecond, nil)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				m.NodeDone(nodes[i%len(nodes)], quorum.OpAcquire, 300*time.Microsecond, nil)
			}
		})
	})
}

// BenchmarkOpDone is one quorum operation reported.
func BenchmarkOpDone(b *testing.B) {
	m, _ := warmMetrics()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
			}
		})
	})
}
