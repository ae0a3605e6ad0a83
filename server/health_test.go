package server

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestReadinessAndUpGaugeFollowTheWatchers: with no client traffic at
// all, a backend stopped with SIGSTOP turns its up gauge to 0 and a
// restarted one (quarantined) stops counting for /readyz, as the
// cluster's watchers see them; /readyz and the gauges say what
// NodeStates says, since they read it.
func TestReadinessAndUpGaugeFollowTheWatchers(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cfg := DefaultConfig()
	cfg.Backends = addrs(servers)
	cfg.NodeTimeout = 500 * time.Millisecond
	cfg.RestartQuarantine = time.Hour
	cfg.MetricsAddr = freeAddr(t)
	cfg.Logger = slog.New(slog.DiscardHandler)
	rd, _ := serve(t, cfg)
	get := func(path string) (int, string) { return httpGet(t, "http://"+cfg.MetricsAddr+path) }
	upGauge := func(i int) string {
		_, body := get("/metrics")
		return gaugeLine(body, "redlockd_backend_up", servers[i].Addr())
	}
	ready := func(code int, body string) func() bool {
		return func() bool { c, b := get("/readyz"); return c == code && strings.HasPrefix(b, body) }
	}
	pollFor(t, "every backend up and ready", func() bool {
		return ready(http.StatusOK, "3 backends answered, quorum 2")() && upGauge(0) == "1" && upGauge(1) == "1"
	})

	servers[0].Stop()
	t.Cleanup(servers[0].Cont)
	pollFor(t, "the stopped backend down", func() bool { return !rd.Cluster().NodeStates()[0].Up })
	if got := upGauge(0); got != "0" {
		t.Errorf("up gauge of the stopped backend = %q, want 0 as NodeStates says", got)
	}
	if code, body := get("/readyz"); code != http.StatusOK || !strings.HasPrefix(body, "2 backends answered, quorum 2") {
		t.Errorf("/readyz with one backend stopped = %d %q", code, body)
	}

	servers[1].Restart(t)
	pollFor(t, "the restarted backend quarantined", func() bool { return rd.Cluster().NodeStates()[1].Quarantined })
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "1 backends answered, quorum 2") {
		t.Errorf("/readyz with one backend stopped and one quarantined = %d %q, want 503: a quarantined vote does not count", code, body)
	}
	_, body := get("/metrics")
	if up, q := gaugeLine(body, "redlockd_backend_up", servers[1].Addr()), gaugeLine(body, "redlockd_backend_quarantined", servers[1].Addr()); up != "1" || q != "1" {
		t.Errorf("restarted backend: up %q, quarantined %q; want 1 and 1", up, q)
	}

	servers[0].Cont()
	pollFor(t, "the continued backend up and ready", func() bool {
		return ready(http.StatusOK, "2 backends answered, quorum 2")() && upGauge(0) == "1"
	})
}

// freeAddr is a loopback address with a port that was free just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// gaugeLine is the value of family's series for backend in a scrape, or
// "" when absent.
func gaugeLine(body, family, backend string) string {
	prefix := fmt.Sprintf("%s{backend=%q} ", family, backend)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return v
		}
	}
	return ""
}
