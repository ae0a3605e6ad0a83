package commands

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// semaphoreReleaseBody is redis-semaphore 5.7's release as bench/ sends
// it: the compare-and-delete in a body that is not recognised, so it is
// replicated with its undo record.
const semaphoreReleaseBody = "local key = KEYS[1]\nlocal identifier = ARGV[1]\n" +
	"if redis.call('get', key) == identifier then\n  return redis.call('del', key)\nend\nreturn 0"

// BenchmarkRelease is the proxy side's cost of one release of a lock taken
// by SET NX PX, over three real redis-servers: the recognised
// compare-and-delete (run natively), the same logic in a body that is
// replicated, and UNLOCK. Only the release is timed, so -benchmem's
// allocations are per release: command table, quorum round and the Redis
// nodes' encoding and reply reading (the servers' work is not in them).
func BenchmarkRelease(b *testing.B) {
	if _, ok := scripts[sha1Hex(semaphoreReleaseBody)]; ok {
		b.Fatal("the semaphore body is recognised: it would not measure replication")
	}
	h := benchRedisHandler(b, redistest.StartN(b, 3))
	f := &fixture{h: h, s: h.NewSession("127.0.0.1:1")}
	b.Cleanup(func() { h.CloseSession(f.s) })
	if got := f.do("SCRIPT", "LOAD", semaphoreReleaseBody); got != "$"+sha1Hex(semaphoreReleaseBody) {
		b.Fatalf("SCRIPT LOAD = %s", got)
	}
	for _, c := range []struct {
		name    string
		release func(key, tok string) []string
	}{
		{"native", func(key, tok string) []string { return evalsha(cadScript, k1(key), tok) }},
		{"replicated", func(key, tok string) []string { return evalsha(semaphoreReleaseBody, k1(key), tok) }},
		{"unlock", func(key, tok string) []string { return []string{"UNLOCK", key, tok} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				b.StopTimer()
				key, tok := c.name+":"+strconv.Itoa(i), "tok"+strconv.Itoa(i)
				if got := f.do("SET", key, tok, "NX", "PX", "10000"); got != "+OK" {
					b.Fatalf("SET NX PX = %s", got)
				}
				args := byteArgs(c.release(key, tok))
				var r recorder
				b.StartTimer()
				h.Exec(f.s, args, &r)
				b.StopTimer()
				if got := r.String(); got != ":1" {
					b.Fatalf("%s release = %s", c.name, got)
				}
				b.StartTimer()
			}
		})
	}
}

// benchRedisHandler is a Handler over three Redis nodes to servers, with
// the node timeout as shipped raised for a shared machine.
func benchRedisHandler(b *testing.B, servers []*redistest.Server) *Handler {
	var nodes []quorum.Node
	for _, s := range servers {
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
		b.Cleanup(func() { _ = n.Close() })
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 2 * time.Second
	cl, err := quorum.New(nodes, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return New(cl, Options{})
}

func byteArgs(words []string) [][]byte {
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return args
}
