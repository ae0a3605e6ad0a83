package hostiletest

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestAbuseThenBaseline: 10k pipelined commands in one write, thousands of
// connections dropped in the middle of a command, and a bulk near 1 GiB
// announced but never sent. Afterwards the proxy still answers, and the
// process's fds and heap are back near where they started.
func TestAbuseThenBaseline(t *testing.T) {
	addr := redlocktest.StartMemory(t, redlocktest.Options{}).Addr
	ping(t, addr)
	fds0, heap0 := fdCount(t), heapInUse()

	// 10k pipelined commands: every reply arrives, in order.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	const n = 10000
	go c.Write(bytes.Repeat([]byte("*1\r\n$4\r\nPING\r\n"), n))
	r := bufio.NewReader(c)
	for i := range n {
		if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("pipelined reply %d: %q %v", i, line, err)
		}
	}
	c.Close()

	// Connections dropped mid-command, one of them with a huge bulk
	// announced: nothing of its size may be allocated.
	drops := 2000
	if testing.Short() {
		drops = 500
	}
	for i := range drops {
		d, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		d.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000000\r\nabc"))
		d.Close()
	}

	ping(t, addr)
	waitFor(t, 20*time.Second, "fds back near baseline", func() bool { return fdCount(t) <= fds0+10 })
	if h := heapInUse(); h > heap0+64<<20 {
		t.Errorf("heap in use %d MiB after the abuse, %d MiB before", h>>20, heap0>>20)
	}
}

func ping(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("PING\r\n"))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.HasPrefix(line, "+PONG") {
		t.Fatalf("proxy does not answer: %q %v", line, err)
	}
}

// waitFor polls an external condition until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
