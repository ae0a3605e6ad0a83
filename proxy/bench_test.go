package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/commands"
	"github.com/redlockd/redlockd/quorum"
)

// BenchmarkProxySetNX measures the proxy's own cost per lock command over
// in-memory nodes (no backend network): parse, run the quorum, encode,
// write. depth is the pipeline depth each client sends per write.
func BenchmarkProxySetNX(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("P=%d", depth), func(b *testing.B) {
			ts := startBenchServer(b)
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				nc, err := net.Dial("tcp", ts)
				if err != nil {
					b.Error(err)
					return
				}
				defer nc.Close()
				rd := bufio.NewReader(nc)
				var out []byte
				for pb.Next() {
					out = out[:0]
					for range depth {
						k := strconv.FormatInt(seq.Add(1), 10)
						out = fmt.Appendf(out, "*6\r\n$3\r\nSET\r\n$%d\r\nk%s\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n", len(k)+1, k)
					}
					if _, err := nc.Write(out); err != nil {
						b.Error(err)
						return
					}
					for range depth {
						line, err := rd.ReadString('\n')
						if err != nil || line != "+OK\r\n" {
							b.Errorf("reply %q, %v", line, err)
							return
						}
					}
				}
			})
			b.StopTimer()
		})
	}
}

// startBenchServer serves the command table over three in-memory nodes
// and returns the address; cleanup closes everything.
func startBenchServer(b *testing.B) string {
	b.Helper()
	var nodes []quorum.Node
	for i := range 3 {
		nodes = append(nodes, embedded.New(fmt.Sprintf("mem-%d", i+1)))
	}
	cluster, err := quorum.New(nodes, quorum.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := New(commands.New(cluster, commands.Options{}), Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	<-srv.Ready()
	b.Cleanup(func() {
		srv.Close()
		<-served
		for _, n := range nodes {
			n.Close()
		}
	})
	return ln.Addr().String()
}
