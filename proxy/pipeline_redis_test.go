package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// gatedRedis is a node on a real redis-server whose SetNX of a key
// "gated:<i>:…" reports on entered[i] that it started and then waits until
// the test closes gate[i], so a test can look at the proxy while commands
// are in flight without sleeping. Each round i has its own channels, made
// up front: a late call of an earlier round never sees a later one's.
type gatedRedis struct {
	quorum.Node
	entered []chan struct{}
	gate    []chan struct{}
}

// Do holds a SET NX of a "gated:<i>:" key until gate[i] closes.
func (g *gatedRedis) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	var i int
	if _, err := fmt.Sscanf(cmd.Key, "gated:%d:", &i); cmd.Kind != quorum.SetNX || err != nil || i < 0 || i >= len(g.gate) {
		g.Node.Do(deadline, cmd, r)
		return
	}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		g.entered[i] <- struct{}{}
		select {
		case <-g.gate[i]:
		case <-ctx.Done():
			r.Receive(quorum.Reply{Err: ctx.Err()})
			return
		}
		g.Node.Do(deadline, cmd, r)
	}()
}

// startGatedRedis starts three redis-servers with a gated node each, for
// the given number of rounds.
func startGatedRedis(t *testing.T, rounds int) []*gatedRedis {
	t.Helper()
	var gs []*gatedRedis
	for range 3 {
		rs := redistest.Start(t)
		n, err := backend.NewRedis(rs.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g := &gatedRedis{Node: n}
		for range rounds {
			g.entered = append(g.entered, make(chan struct{}, 2))
			g.gate = append(g.gate, make(chan struct{}))
		}
		gs = append(gs, g)
	}
	return gs
}

// A pipelined LOCK counts against the limit on commands in flight unless
// it has a WAIT option: an argument spelled "wait" elsewhere (here the
// token) does not let it bypass the limit.
func TestPipelineLimitExactAboutWait(t *testing.T) {
	tests := []struct {
		opts  [2]string // LOCK options of the two pipelined commands
		slots int       // limit slots they hold while in flight
	}{
		{[2]string{"TOKEN wait", "TOKEN WAIT"}, 2},
		{[2]string{"KEEPALIVE TOKEN wait", "TOKEN wait2 KEEPALIVE"}, 2},
		{[2]string{"WAIT 5000", "TOKEN t1 WAIT 5000"}, 0},
	}
	gs := startGatedRedis(t, len(tests))
	nodes := make([]quorum.Node, len(gs))
	for i, g := range gs {
		nodes[i] = g
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	for i, tc := range tests {
		r.send(fmt.Sprintf("LOCK gated:%d:a 10000 %s\r\nLOCK gated:%d:b 10000 %s\r\n", i, tc.opts[0], i, tc.opts[1]))
		// Both commands are inside their round once node 0 saw both.
		for range 2 {
			select {
			case <-gs[0].entered[i]:
			case <-time.After(10 * time.Second):
				t.Fatalf("%v: the commands did not reach the backends", tc.opts)
			}
		}
		if got := pipelineSlots.held(); got != tc.slots {
			t.Errorf("%v: %d limit slots held in flight, want %d", tc.opts, got, tc.slots)
		}
		for _, g := range gs {
			close(g.gate[i])
		}
		for range 2 {
			expectGrant(r)
		}
	}
}

// expectGrant reads one LOCK reply, [token, validity], and checks that it
// granted the lock.
func expectGrant(r *raw) {
	r.t.Helper()
	var lines []string
	for range 4 {
		l, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("LOCK reply %q: %v", lines, err)
		}
		lines = append(lines, l)
	}
	if lines[0] != "*2\r\n" || lines[1][0] != '$' || lines[3][0] != ':' {
		r.t.Fatalf("LOCK reply %q; want [token, validity]", lines)
	}
}

// Pipelined LOCKs of the SHARED and FAIR kinds run on the batch path as
// try-locks do, over real redis-servers: readers of one key share it,
// and a plain or fair lock of a held key is refused, each reply in its
// command's place.
func TestPipelinedLockKindsRedis(t *testing.T) {
	var nodes []quorum.Node
	for range 3 {
		rs := redistest.Start(t)
		n, err := backend.NewRedis(rs.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	ts := startServer(t, Options{}, nodes...)
	r := ts.dial(t)
	r.send("LOCK a 10000 SHARED\r\nLOCK b 10000 SHARED\r\nLOCK c 10000 FAIR\r\nLOCK d 10000\r\n")
	for range 4 {
		expectGrant(r)
	}
	r.send("LOCK a 10000 SHARED\r\nLOCK b 10000\r\nLOCK c 10000 FAIR\r\nLOCK d 10000 SHARED\r\n")
	expectGrant(r)
	for range 3 {
		r.expect("$-1\r\n")
	}
}
