//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package proxy

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestBackendSyscallsPerBatch counts the write system calls on the
// proxy's backend lines (real redis-servers, one line each, the default)
// while a client pipelines batches of K locks on distinct keys (K=1: a
// lone command, whose round is started at once, wakes the writer itself
// and leaves in one write). The proxy
// starts a batch's K rounds with the backends' writes held
// (runConcurrent); each line's writer is woken once, by the release, and
// sends everything queued in one write, which the socket takes in one
// call. So a batch costs each line one write system call.
//
// That holds when the writer is idle as the batch starts. A writer woken
// before the batch (for the batch before, or for a command sent outside
// it) that has not yet taken its queue takes the batch's first rounds
// with it, and the rest leave at the release: two writes. The multiplexer
// does not hold back a writer already woken, so that no hold can starve
// it. Besides the batches, a node's lock horizon is raised in a write of
// its own, when a yes would outlive it (quorum/horizon.go): once per node
// here, after the first batch, and then about once per TTL of a steady
// stream of locks.
//
// The test lets every line write all of a batch, and the first batch's
// horizon raises, before the next batch starts, by watching the bytes
// the lines write; so it asserts the bound exactly: each batch, one
// write on each line, and no other write.
func TestBackendSyscallsPerBatch(t *testing.T) {
	for _, depth := range []int{16, 1} {
		t.Run(fmt.Sprintf("K=%d", depth), func(t *testing.T) { backendSyscallsPerBatch(t, depth) })
	}
}

func backendSyscallsPerBatch(t *testing.T, depth int) {
	const batches = 10
	calls := traceSockets(t)
	servers := redistest.StartN(t, 3)
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		// No health checks (they have connections of their own anyway).
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{HealthInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	lines := func(i int) []sockLog {
		return calls.find(func(l *sockLog) bool { return l.remote == servers[i].Addr() })
	}
	// Batch -1 dials the lines and loads the scripts (on a line's first
	// write, or before it), and its yeses raise the horizons: not counted.
	for b := -1; b < batches; b++ {
		before := make([]int, len(servers))
		for i := range servers {
			for _, l := range lines(i) {
				before[i] += len(l.writes)
			}
		}
		r.send(setBatch("lock:", b, depth))
		for range depth {
			r.expect("+OK\r\n")
		}
		// The replies follow a majority's answers: the rounds may still
		// be on their way to the third server.
		var sent []string
		for k := range depth {
			sent = append(sent, fmt.Sprintf("lock:%03d.%03d", b, k))
		}
		if b < 0 {
			waitWritten(t, calls, servers, append(sent, quorum.HorizonKey))
			continue
		}
		waitWritten(t, calls, servers, sent)
		for i := range servers {
			ls := lines(i)
			if len(ls) != 1 {
				t.Fatalf("batch %d: %d connections to backend %d made calls, want its one line", b, len(ls), i)
			}
			if n := len(ls[0].writes) - before[i]; n != 1 {
				t.Errorf("batch %d of %d rounds reached backend %d in %d writes (the line's writes: %v bytes); want one",
					b, depth, i, n, ls[0].writes)
			}
			if len(ls[0].other) > 0 {
				t.Errorf("backend %d: other calls on its line: %q", i, ls[0].other)
			}
		}
	}
}

// waitWritten waits until the lines to every server have written every
// one of keys, each a bulk string of a command.
func waitWritten(t *testing.T, calls *sockCalls, servers []*redistest.Server, keys []string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		missing := ""
		for i, s := range servers {
			var out []byte
			for _, l := range calls.find(func(l *sockLog) bool { return l.remote == s.Addr() }) {
				out = append(out, l.out...)
			}
			for _, k := range keys {
				if !bytes.Contains(out, []byte("\r\n"+k+"\r\n")) {
					missing = fmt.Sprintf("backend %d was not sent %q", i, k)
				}
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-calls.wrote:
		case <-timeout:
			t.Fatal(missing)
		}
	}
}
