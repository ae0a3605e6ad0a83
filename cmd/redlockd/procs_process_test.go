package main

import (
	"bufio"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestProcessorsArePacedOverRemoteBackends runs the binary: over
// redis-servers it runs on one processor (procpace) while it has next to
// nothing to do; in embedded mode, and with GOMAXPROCS in its
// environment, it keeps what Go chose or was told.
func TestProcessorsArePacedOverRemoteBackends(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set for every process here: nothing is paced")
	}
	servers := redistest.StartN(t, 1)
	bin := redlocktest.Build(t, "./cmd/redlockd")
	metricsOf := func(t *testing.T, p *redlocktest.Process) string {
		fields, _ := p.WaitLog(t, 0, "serving metrics")
		addr, _ := fields["addr"].(string)
		return "http://" + addr + "/metrics"
	}
	embedded := procsOf(t, metricsOf(t, redlocktest.StartBinary(t, bin, "--metrics-addr", "127.0.0.1:0")))
	if embedded < 2 {
		t.Skipf("Go chose %d processor here: nothing to pace", embedded)
	}

	paced := metricsOf(t, redlocktest.StartProcess(t, bin, servers, "--metrics-addr", "127.0.0.1:0"))
	// Idle, it is on one processor from the start, or back on one after
	// a busy start-up.
	deadline := time.Now().Add(20 * time.Second)
	for procsOf(t, paced) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle redlockd over a redis-server runs on %d processors, want 1 (embedded: %d)", procsOf(t, paced), embedded)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Setenv("GOMAXPROCS", strconv.Itoa(embedded))
	told := metricsOf(t, redlocktest.StartProcess(t, bin, servers, "--metrics-addr", "127.0.0.1:0"))
	// A pace would have set one processor before the process listened.
	if got := procsOf(t, told); got != embedded {
		t.Fatalf("with GOMAXPROCS=%d in its environment redlockd runs on %d processors", embedded, got)
	}
}

// procsOf reads go_sched_gomaxprocs_threads from the metrics at url.
func procsOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_sched_gomaxprocs_threads "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("go_sched_gomaxprocs_threads %q", v)
			}
			return n
		}
	}
	t.Fatalf("no go_sched_gomaxprocs_threads at %s", url)
	return 0
}
