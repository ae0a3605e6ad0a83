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
	m.NodesDone(quorum.OpAcquire, results(nodes, time.Millisecond))
	m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
	return m, nodes
}

// results is one round's calls to nodes, each answered in d.
func results(nodes []string, d time.Duration) []quorum.NodeResult {
	rs := make([]quorum.NodeResult, len(nodes))
	for i, n := range nodes {
		rs[i] = quorum.NodeResult{Index: i, Node: n, D: d}
	}
	return rs
}

// BenchmarkNodesDone is one round's three backend replies reported, one
// goroutine at a time and from every core at once as the rounds' last
// replies report.
func BenchmarkNodesDone(b *testing.B) {
	m, nodes := warmMetrics()
	round := results(nodes, 300*time.Microsecond)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.NodesDone(quorum.OpAcquire, round)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.NodesDone(quorum.OpAcquire, round)
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
