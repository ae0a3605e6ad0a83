package metrics

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkObserve is what the binary pays per lock command for metrics:
// one command, one quorum operation and its round's three node calls.
func BenchmarkObserve(b *testing.B) {
	m := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	timeout := errors.New("i/o timeout")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		answered := results(nodes, 300*time.Microsecond)
		late := results(nodes, 300*time.Microsecond)
		late[2].Err = timeout
		i := 0
		for pb.Next() {
			round := answered
			if i%100 == 0 {
				round = late
			}
			m.NodesDone("acquire", round)
			m.OpDone("acquire", "ok", time.Millisecond, 9*time.Second, 10*time.Second)
			m.CommandDone("set", "acquired", time.Millisecond, nil)
			i++
		}
	})
}
