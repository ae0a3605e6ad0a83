package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/metrics"
	"github.com/redlockd/redlockd/proxy"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// serve builds cfg's redlockd, serves it on a loopback port and returns a
// RESP2 client; the test's cleanup shuts it down.
func serve(t *testing.T, cfg Config) (*Redlockd, *redis.Client) {
	t.Helper()
	rd, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rd.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rd.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rd.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, proxy.ErrServerClosed) {
			t.Errorf("Serve = %v, want ErrServerClosed", err)
		}
	})
	select {
	case <-rd.Ready():
	case err := <-served:
		t.Fatalf("Serve: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return rd, c
}

func addrs(servers []*redistest.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out
}

// pollFor polls cond every 10ms for at most 20s.
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// quarantinedAfterRestart restarts servers[0] once cluster watches every
// backend, and returns the quarantine's end with the times just before
// the restart and just after the quarantine was seen.
func quarantinedAfterRestart(t *testing.T, cluster *quorum.Cluster, servers []*redistest.Server) (until, before, seen time.Time) {
	t.Helper()
	pollFor(t, "every backend watched and up", func() bool {
		for _, st := range cluster.NodeStates() {
			if !st.Watched || !st.Up || st.RunID == "" {
				return false
			}
		}
		return true
	})
	before = time.Now()
	servers[0].Restart(t)
	pollFor(t, "the restarted backend quarantined", func() bool { return cluster.NodeStates()[0].Quarantined })
	return cluster.NodeStates()[0].QuarantinedUntil, before, time.Now()
}

// TestMaxTTLIsTheOneSetting: the one MaxTTL caps the commands and, with
// the quarantine that follows it, is how long a restarted backend sits out.
func TestMaxTTLIsTheOneSetting(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cfg := DefaultConfig()
	cfg.Backends = addrs(servers)
	cfg.NodeTimeout = 500 * time.Millisecond
	cfg.MaxTTL = 3 * time.Second
	cfg.RestartQuarantine = QuarantineMaxTTL
	rd, c := serve(t, cfg)
	if _, err := c.Do(t.Context(), "LOCK", "k", "3001").Result(); err == nil || !strings.Contains(err.Error(), "ttl exceeds max-ttl") {
		t.Fatalf("LOCK over max-ttl = %v, want the max-ttl error", err)
	}
	if _, err := c.Do(t.Context(), "LOCK", "k", "3000").Slice(); err != nil {
		t.Fatalf("LOCK at max-ttl: %v", err)
	}
	until, before, seen := quarantinedAfterRestart(t, rd.Cluster(), servers)
	if until.Before(before.Add(cfg.MaxTTL)) || until.After(seen.Add(cfg.MaxTTL)) {
		t.Fatalf("quarantined until %v: want MaxTTL (%v) after the restart, between %v and %v",
			until.Format(time.StampMilli), cfg.MaxTTL, before.Add(cfg.MaxTTL).Format(time.StampMilli), seen.Add(cfg.MaxTTL).Format(time.StampMilli))
	}
}

// TestDefaultQuorumConfigQuarantines: a cluster built from the quorum's
// own defaults sits a restarted backend out as long as the other
// backends' lock horizons say: no lock was ever granted, so only briefly,
// far below the default MaxTTL (24h), and then the backend votes again.
func TestDefaultQuorumConfigQuarantines(t *testing.T) {
	servers := redistest.StartN(t, 3)
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		n, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		t.Cleanup(func() { n.Close() })
	}
	qcfg := quorum.DefaultConfig()
	if qcfg.RestartQuarantine != quorum.QuarantineAuto || qcfg.MaxTTL != 24*time.Hour {
		t.Errorf("default RestartQuarantine %v, MaxTTL %v: want auto and 24h", qcfg.RestartQuarantine, qcfg.MaxTTL)
	}
	qcfg.NodeTimeout = 500 * time.Millisecond
	cluster, err := quorum.New(nodes, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	pollFor(t, "every backend watched and up", func() bool {
		for _, st := range cluster.NodeStates() {
			if !st.Watched || !st.Up || st.RunID == "" {
				return false
			}
		}
		return true
	})
	// The auto quarantine ends once a backend that provably ran before the
	// restart answers; uptimes are whole seconds read with a tolerance of
	// two, so a restart in the servers' first seconds leaves it at its cap
	// (the safe side of that rule). Restart only once all have run longer.
	pollFor(t, "every server up for 3 s", func() bool {
		for _, s := range servers {
			text, err := s.Client().Info(t.Context(), "server").Result()
			_, rest, ok := strings.Cut(text, "uptime_in_seconds:")
			secs, _, _ := strings.Cut(rest, "\r\n")
			if err != nil || !ok || len(secs) == 0 || secs == "0" || secs == "1" || secs == "2" {
				return false
			}
		}
		return true
	})
	old, before := cluster.NodeStates()[0].RunID, time.Now()
	servers[0].Restart(t)
	var st quorum.NodeState
	pollFor(t, "the restarted backend seen and voting again", func() bool {
		st = cluster.NodeStates()[0]
		return st.RunID != old && st.Up && !st.Quarantined && !st.QuarantinePending
	})
	if st.QuarantinedUntil.Before(before) || st.QuarantinedUntil.After(before.Add(time.Minute)) {
		t.Fatalf("quarantined until %v, want a quarantine after the restart at %v, far below MaxTTL",
			st.QuarantinedUntil.Format(time.StampMilli), before.Format(time.StampMilli))
	}
}

// TestQuarantineSettings: 0 turns the quarantine off, a duration fixes
// it, whatever MaxTTL is.
func TestQuarantineSettings(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{QuarantineMaxTTL, time.Hour}, {QuarantineAuto, quorum.QuarantineAuto}, {0, 0}, {time.Second, time.Second}} {
		cfg := DefaultConfig()
		cfg.MaxTTL, cfg.RestartQuarantine = time.Hour, tc.set
		if got := cfg.quorumConfig(nil); got.RestartQuarantine != tc.want || got.MaxTTL != time.Hour {
			t.Errorf("RestartQuarantine %v: quorum has %v (MaxTTL %v), want %v", tc.set, got.RestartQuarantine, got.MaxTTL, tc.want)
		}
	}
	cfg := DefaultConfig()
	cfg.RestartQuarantine = -2 * time.Second
	if err := cfg.Validate(); err == nil {
		t.Error("a negative quarantine other than QuarantineMaxTTL was accepted")
	}
}

// TestMetricsSeeTheStack: the metrics read the handler and the cluster
// that were built after them, and INFO shows the metrics' figures.
func TestMetricsSeeTheStack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes = []quorum.Node{embedded.New("m1"), embedded.New("m2"), embedded.New("m3")}
	rd, c := serve(t, cfg)
	if _, err := c.Do(t.Context(), "LOCK", "k", "5000", "KEEPALIVE").Slice(); err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, rd.Metrics(), metrics.NameClients); got != 1 {
		t.Errorf("%s = %v, want 1", metrics.NameClients, got)
	}
	if got := gauge(t, rd.Metrics(), metrics.NameKeepaliveLocks); got != 1 {
		t.Errorf("%s = %v, want 1", metrics.NameKeepaliveLocks, got)
	}
	info, err := c.Info(t.Context(), "locks").Result()
	if err != nil || !strings.Contains(info, "quorum_acquire_ok:1\r\n") {
		t.Errorf("INFO locks = %q, %v; want the metrics' count of the LOCK", info, err)
	}
}

func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestShutdownReleasesEverything: Shutdown closes the nodes it was given,
// twice is harmless, and Serve afterwards serves nothing.
func TestShutdownReleasesEverything(t *testing.T) {
	m := embedded.New("m1")
	cfg := DefaultConfig()
	cfg.Nodes = []quorum.Node{m}
	rd, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := rd.Shutdown(t.Context()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	}
	if _, err := nodetest.SetNX(t.Context(), m, "k", "a", time.Second); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("a node after Shutdown: %v, want ErrClosed", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := rd.Serve(ln); !errors.Is(err, proxy.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown = %v, want ErrServerClosed", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener given to Serve after Shutdown still accepts")
	}
}

// TestNewRefusesBadConfig: New closes the nodes it was given when it
// fails.
func TestNewRefusesBadConfig(t *testing.T) {
	m := embedded.New("m1")
	cfg := DefaultConfig()
	cfg.Nodes = []quorum.Node{m}
	cfg.NodeTimeout = 0
	if _, err := New(t.Context(), cfg); err == nil {
		t.Fatal("New accepted NodeTimeout 0")
	}
	if _, _, _, err := nodetest.Get(t.Context(), m, "k"); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("the given node after a failed New: %v, want ErrClosed", err)
	}
}

// TestSessionTTLReachesTheQuorum: --session-ttl is also the ttl a
// replicated script's key gets where the script leaves it without one.
func TestSessionTTLReachesTheQuorum(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SessionTTL = 7 * time.Second
	if got := cfg.quorumConfig(nil).SessionTTL; got != cfg.SessionTTL {
		t.Fatalf("quorum SessionTTL = %v, want %v", got, cfg.SessionTTL)
	}
}
