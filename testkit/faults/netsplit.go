package faults

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// Split is a real network partition: redis-servers in a network namespace
// of their own, reached from the test's namespace over veth links, one
// link per side. Each side is a separate path to every server, so a test
// can cut one proxy off (its side) while another keeps its path. A cut
// sets the side's link down inside the namespace: packets vanish, with
// no reset and no ICMP, and connections already open stay open, as when
// a real network breaks; a heal brings the link back and TCP retransmits
// what it still holds.
//
// It needs CAP_NET_ADMIN (ip netns, ip link); without it the test is
// skipped.
type Split struct {
	ns      string
	sides   []splitSide
	servers []*splitServer
}

type splitSide struct {
	inner string // the link's end inside the namespace
	addr  string // the servers' address on this side
}

type splitServer struct {
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// splitPort is the first server's port; inside a fresh namespace every
// port is free.
const splitPort = 7100

// StartSplit runs n redis-servers (persistence off) in a new namespace
// reachable over the given number of sides.
func StartSplit(t testing.TB, n, sides int) *Split {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s := &Split{ns: "rlsplit" + id}
	if err := ipCmd("netns", "add", s.ns); err != nil {
		t.Skipf("faults: no network namespaces here: %v", err)
	}
	t.Cleanup(s.close)
	must := func(args ...string) {
		t.Helper()
		if err := ipCmd(args...); err != nil {
			t.Fatalf("faults: ip %s: %v", strings.Join(args, " "), err)
		}
	}
	for i := range sides {
		outer, inner := fmt.Sprintf("rl%s%do", id, i), fmt.Sprintf("rl%s%di", id, i)
		// 10.b0.(b1+i).0/30 for side i: distinct per namespace and side.
		net := fmt.Sprintf("10.%d.%d.", 100+int(b[0])%100, (int(b[1])+i*17)%256)
		must("link", "add", outer, "type", "veth", "peer", "name", inner)
		must("link", "set", inner, "netns", s.ns)
		must("addr", "add", net+"1/30", "dev", outer)
		must("link", "set", outer, "up")
		must("-n", s.ns, "addr", "add", net+"2/30", "dev", inner)
		must("-n", s.ns, "link", "set", inner, "up")
		s.sides = append(s.sides, splitSide{inner: inner, addr: net + "2"})
	}
	must("-n", s.ns, "link", "set", "lo", "up")
	for i := range n {
		srv := &splitServer{port: splitPort + i}
		s.servers = append(s.servers, srv)
		if err := s.run(t, srv); err != nil {
			t.Fatalf("faults: %v", err)
		}
	}
	return s
}

func ipCmd(args ...string) error {
	out, err := childproc.CombinedOutput(childproc.Command("ip", args...))
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// run starts srv inside the namespace and waits until it answers PING on
// the first side.
func (s *Split) run(t testing.TB, srv *splitServer) error {
	cmd := childproc.Command("ip", "netns", "exec", s.ns, "redis-server",
		"--port", strconv.Itoa(srv.port), "--bind", "0.0.0.0", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := childproc.Start(cmd); err != nil {
		return fmt.Errorf("start redis-server in %s: %w", s.ns, err)
	}
	done := make(chan struct{})
	srv.mu.Lock()
	srv.cmd, srv.done = cmd, done
	srv.mu.Unlock()
	go func() { _ = cmd.Wait(); close(done) }()
	addr := net.JoinHostPort(s.sides[0].addr, strconv.Itoa(srv.port))
	deadline := time.Now().Add(5 * time.Second)
	for !redistest.Ping(addr, nil) {
		select {
		case <-done:
			return fmt.Errorf("redis-server in %s exited during start-up", s.ns)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s did not answer PING", addr)
		}
		time.Sleep(20 * time.Millisecond) // an external process gives no readiness signal
	}
	return nil
}

// Addrs are the servers' addresses as seen over side.
func (s *Split) Addrs(side int) []string {
	out := make([]string, len(s.servers))
	for i, srv := range s.servers {
		out[i] = net.JoinHostPort(s.sides[side].addr, strconv.Itoa(srv.port))
	}
	return out
}

// Cut breaks side's link: every packet between that side and the servers
// is lost from now on.
func (s *Split) Cut(t testing.TB, side int) {
	t.Helper()
	if err := ipCmd("-n", s.ns, "link", "set", s.sides[side].inner, "down"); err != nil {
		t.Fatalf("faults: cut side %d: %v", side, err)
	}
}

// Heal brings side's link back.
func (s *Split) Heal(t testing.TB, side int) {
	t.Helper()
	if err := ipCmd("-n", s.ns, "link", "set", s.sides[side].inner, "up"); err != nil {
		t.Fatalf("faults: heal side %d: %v", side, err)
	}
}

// close kills the servers and removes the namespace, and with it the
// links.
func (s *Split) close() {
	for _, srv := range s.servers {
		srv.mu.Lock()
		cmd, done := srv.cmd, srv.done
		srv.mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}
	_ = ipCmd("netns", "del", s.ns)
}
