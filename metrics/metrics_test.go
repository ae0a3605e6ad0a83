package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/logbuf"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// rig is a cluster over real redis-servers, observed by a Metrics.
type rig struct {
	servers []*redistest.Server
	cluster *quorum.Cluster
	m       *Metrics
	logs    *logbuf.Buffer
	http    *httptest.Server
}

func newRig(t *testing.T, n int) *rig {
	t.Helper()
	r := &rig{servers: redistest.StartN(t, n), logs: &logbuf.Buffer{}}
	var nodes []quorum.Node
	var names []string
	for _, s := range r.servers {
		node, err := backend.NewRedis(s.Addr(), backend.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
		names = append(names, node.Name())
	}
	r.m = New(Options{Backends: names, Version: "test", Clients: func() int64 { return 7 },
		Keepalive:  func() (int64, int64) { return 2, 1 },
		NodeStates: func() []quorum.NodeState { return r.cluster.NodeStates() },
		Logger:     slog.New(slog.NewTextHandler(r.logs, nil))})
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond // generous: the machine is shared
	cfg.RestartQuarantine = 0                // a restarted backend counts as ready at once
	cfg.Observer = r.m
	var err error
	if r.cluster, err = quorum.New(nodes, cfg); err != nil {
		t.Fatal(err)
	}
	r.http = httptest.NewServer(Handler(r.m))
	t.Cleanup(r.http.Close)
	return r
}

func (r *rig) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// getUntil gets path until it answers code, for at most 10s.
func (r *rig) getUntil(t *testing.T, path string, code int) (int, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, body := r.get(t, path)
		if got == code || time.Now().After(deadline) {
			return got, body
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFamiliesMoveAfterLocks(t *testing.T) {
	r := newRig(t, 3)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		l, err := r.cluster.Acquire(ctx, "k", quorum.NewToken(), 10*time.Second)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if _, err := r.cluster.Release(ctx, "k", l.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	if _, err := r.cluster.Acquire(ctx, "held", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cluster.Acquire(ctx, "held", "b", 10*time.Second); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("second Acquire: %v, want contention", err)
	}
	r.m.CommandDone("lock", "acquired", time.Millisecond, nil)

	code, body := r.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`redlockd_quorum_operations_total{op="acquire",outcome="ok"} 4`,
		`redlockd_quorum_operations_total{op="acquire",outcome="contended"} 1`,
		`redlockd_quorum_operations_total{op="release",outcome="ok"} 3`,
		`redlockd_lock_validity_ratio_count 4`,
		`redlockd_commands_total{command="lock",outcome="acquired"} 1`,
		`redlockd_keepalive_locks 2`,
		`redlockd_keepalive_renewals_lost_total 1`,
		`redlockd_client_connections 7`,
		`redlockd_build_info{version="test"} 1`,
		`redlockd_backend_up{backend="` + r.servers[0].Addr() + `"} 1`,
		`redlockd_backend_quarantined{backend="` + r.servers[0].Addr() + `"} 0`,
		`redlockd_backend_request_duration_seconds_count{backend="` + r.servers[1].Addr() + `",op="acquire"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Every redlockd_ family in the output is one Names lists, and the
	// other way round.
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (redlockd_\w+)`).FindAllStringSubmatch(body, -1) {
		seen[m[1]] = true
	}
	for _, n := range Names() {
		if !seen[n] {
			t.Errorf("family %s listed by Names but not served", n)
		}
		delete(seen, n)
	}
	for n := range seen {
		t.Errorf("family %s served but missing from Names", n)
	}
}

func TestReadinessAndStateChangeLogs(t *testing.T) {
	r := newRig(t, 3)
	// The first looks at the servers arrive just after the cluster starts.
	if code, body := r.getUntil(t, "/readyz", http.StatusOK); code != http.StatusOK {
		t.Fatalf("/readyz with all up: %d %s", code, body)
	}
	if code, _ := r.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if strings.Contains(r.logs.String(), "backend") {
		t.Errorf("healthy start logged a state change:\n%s", r.logs)
	}
	r.servers[0].Kill()
	r.servers[1].Kill()
	// The watchers look at the servers every second: poll, bounded.
	code, body := r.getUntil(t, "/readyz", http.StatusServiceUnavailable)
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "1 backends answered, quorum 2") {
		t.Fatalf("/readyz with 2 of 3 down: %d %q", code, body)
	}
	if code, _ := r.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with backends down: %d", code)
	}
	r.get(t, "/readyz") // a second failure is no news: no second line
	down := r.servers[0].Addr()
	if _, body := r.get(t, "/metrics"); !strings.Contains(body, `redlockd_backend_up{backend="`+down+`"} 0`) {
		t.Errorf("up gauge of killed backend is not 0:\n%s", body)
	}
	if n := strings.Count(r.logs.String(), "backend down"); n != 2 {
		t.Errorf("%d 'backend down' lines, want 2:\n%s", n, r.logs)
	}
	r.servers[0].Restart(t)
	// A pooled connection to the old process may fail once more: allow a
	// few checks, bounded.
	if code, _ = r.getUntil(t, "/readyz", http.StatusOK); code != http.StatusOK {
		t.Fatalf("/readyz after a restart: %d", code)
	}
	if n := strings.Count(r.logs.String(), "backend up"); n != 1 {
		t.Errorf("%d 'backend up' lines, want 1:\n%s", n, r.logs)
	}
	// The link fields are what the last call found: make one.
	_, _ = r.cluster.Get(context.Background(), "k")
	fields := r.m.BackendFields(r.servers[1].Addr())
	if !strings.Contains(fields, ",link=down,") || !strings.Contains(fields, "last_call_error=") {
		t.Errorf("BackendFields of a dead backend = %q", fields)
	}
}

func TestErrorKindsFromRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	node, err := backend.NewRedis(srv.Addr(), backend.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	call := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := nodetest.SetNX(ctx, node, "k", "v", time.Minute)
		return err
	}
	if err := srv.Client().Do(context.Background(), "config", "set", "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if got := ErrorKind(call(2 * time.Second)); got != "OOM" {
		t.Errorf("OOM reply: kind %q", got)
	}
	srv.Stop()
	got := ErrorKind(call(50 * time.Millisecond))
	srv.Cont()
	if got != "timeout" {
		t.Errorf("stopped server: kind %q", got)
	}
	srv.Kill()
	// A call may still go out on the connection the kill broke (EOF or a
	// reset: "other") until the node has seen it close; once it dials
	// again, the dial is refused.
	got = ""
	for range 20 {
		if got = ErrorKind(call(2 * time.Second)); got != "other" {
			break
		}
	}
	if got != "refused" {
		t.Errorf("killed server: kind %q", got)
	}
	if got := ErrorKind(errors.New("x")); got != "other" {
		t.Errorf("plain error: kind %q", got)
	}
}

func TestInfoLines(t *testing.T) {
	m := New(Options{Backends: []string{"a:1"}})
	m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
	nodeDone(m, 0, "a:1", quorum.OpAcquire, time.Millisecond, errors.New("boom, bang"))
	var b strings.Builder
	m.WriteInfo("locks", &b)
	for _, want := range []string{"quorum_acquire_ok:1\r\n", "validity_ratio_mean:0.9000\r\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("INFO locks lacks %q:\n%s", want, b.String())
		}
	}
	f := m.BackendFields("a:1")
	if !strings.Contains(f, ",link=down,") || !strings.Contains(f, "last_call_error=boom; bang") {
		t.Errorf("BackendFields = %q", f)
	}
}
