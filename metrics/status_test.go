package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// fixedStates is a record with one backend in each state.
func fixedStates() []quorum.NodeState {
	now := time.Now()
	return []quorum.NodeState{
		{Name: "a:1", Watched: true, Up: true, RunID: "run-a"},
		{Name: "b:2", Watched: true, Up: true, RunID: "run-b2", Quarantined: true, QuarantinedUntil: now.Add(90 * time.Second), QuarantinePending: true},
		{Name: "c:3", Watched: true, LastError: "dial tcp 127.0.0.1:3: connect: connection refused"},
		{Name: "<d>:4", Watched: true, Up: true, RunID: "run-a", Refused: "same server as a:1"},
		{Name: "cluster://e:5", Watched: true, Up: true, RunID: "cluster://e:5", Shards: []quorum.ShardState{
			{Name: "0-8191", Master: "10.0.0.1:7000", RunID: "s1", Up: true},
			{Name: "8192-16383", Master: "10.0.0.2:7000", RunID: "s2", Up: true, Quarantined: true, QuarantinedUntil: now.Add(time.Hour)},
		}},
	}
}

func getPage(t *testing.T, m *Metrics, path string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// rowText is the text of the table row whose first cell is name (and,
// when shard is set, whose second cell starts with it), tags removed.
func rowText(t *testing.T, page, name, shard string) string {
	t.Helper()
	for _, row := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(page, -1) {
		cells := regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row[1], -1)
		if len(cells) > 1 && cells[0][1] == name && strings.HasPrefix(cells[1][1], shard) {
			var parts []string
			for _, c := range cells {
				parts = append(parts, c[1])
			}
			return strings.Join(parts, " | ")
		}
	}
	t.Fatalf("no row for %s %s in\n%s", name, shard, page)
	return ""
}

func TestStatusPage(t *testing.T) {
	m := New(Options{Version: "v9.9.9", NodeStates: fixedStates, Logger: discardLogger(),
		Keepalive: func() (int64, int64) { return 4, 2 }, Waiting: func() int64 { return 3 },
		Started: time.Now().Add(-time.Hour)})
	m.OpDone(quorum.OpAcquire, quorum.OutcomeOK, time.Millisecond, 9*time.Second, 10*time.Second)
	nodeDone(m, 0, "a:1", quorum.OpAcquire, 2*time.Millisecond, nil)
	code, page := getPage(t, m, "/")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="2">`, "Version v9.9.9, up 1h0m0s.",
		"Not locking: 2 of 5 backends vote, quorum 3.",
		"<th>granted</th><td>1</td>", "<th>waiting now (LOCK … WAIT)</th><td>3</td>",
		"<th>kept now (KEEPALIVE and session locks)</th><td>4</td>", "<th>kept locks lost</th><td>2</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rows := []struct{ name, shard, want string }{
		{"a:1", "", `a:1 |  | up | up | 2ms | run-a |  | `},
		{"b:2", "", `b:2 |  | quarantined | unknown |  | run-b2 | 1m30s | restarted (or started after the others) and may have lost locks; votes again in 1m30s at most (the other backends&#39; lock horizons are not read yet)`},
		{"c:3", "", `c:3 |  | down | unknown |  |  |  | dial tcp 127.0.0.1:3: connect: connection refused`},
		{"&lt;d&gt;:4", "", `&lt;d&gt;:4 |  | refused | unknown |  | run-a |  | same server as a:1`},
		{"cluster://e:5", "8192-16383", `cluster://e:5 | 8192-16383 (10.0.0.2:7000) | quarantined |  |  | s2 | 1h0m0s | restarted`},
	}
	for _, r := range rows {
		got := rowText(t, page, r.name, r.shard)
		// The times left are read a moment after the record was made.
		got = regexp.MustCompile(`1m2\ds|1m30s`).ReplaceAllString(got, "1m30s")
		got = regexp.MustCompile(`59m5\ds|1h0m0s`).ReplaceAllString(got, "1h0m0s")
		if !strings.HasPrefix(got, r.want) {
			t.Errorf("row %s %s:\n got %q\nwant %q…", r.name, r.shard, got, r.want)
		}
	}
	if strings.Contains(page, "<d>") {
		t.Error("a backend name is not escaped")
	}
	// No external assets: nothing is loaded from anywhere, and no script.
	if regexp.MustCompile(`(?i)(src=|<script|<link|url\(|https?://)`).MatchString(page) {
		t.Errorf("the page loads something: %s", page)
	}
}

func TestStatusPageReady(t *testing.T) {
	states := func() []quorum.NodeState { return fixedStates()[:1] }
	m := New(Options{NodeStates: states, Logger: discardLogger()})
	if _, page := getPage(t, m, "/"); !strings.Contains(page, "Locking: 1 of 1 backends vote, quorum 1.") {
		t.Errorf("page %s", page)
	}
	if code, _ := getPage(t, m, "/nothing-here"); code != http.StatusNotFound {
		t.Errorf("/nothing-here: %d, want 404 (only / is the page)", code)
	}
}

// TestBackendsReady: /readyz/backends is 200 only while every backend
// votes, and names why each one does not.
func TestBackendsReady(t *testing.T) {
	m := New(Options{NodeStates: fixedStates, Logger: discardLogger()})
	code, body := getPage(t, m, "/readyz/backends")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "a:1 up\n") ||
		!strings.Contains(body, "b:2 quarantined: restarted") || !strings.Contains(body, "c:3 down: dial tcp") {
		t.Fatalf("/readyz/backends = %d %q", code, body)
	}
	if code, body := getPage(t, m, "/readyz/backends?backend=a:1"); code != http.StatusOK || body != "a:1 up\n" {
		t.Errorf("?backend=a:1: %d %q", code, body)
	}
	if code, _ := getPage(t, m, "/readyz/backends?backend=b:2"); code != http.StatusServiceUnavailable {
		t.Errorf("?backend=b:2: %d", code)
	}
	if code, _ := getPage(t, m, "/readyz/backends?backend=zz:9"); code != http.StatusNotFound {
		t.Errorf("?backend=zz:9: %d", code)
	}
	good := New(Options{NodeStates: func() []quorum.NodeState { return fixedStates()[:1] }, Logger: discardLogger()})
	if code, _ := getPage(t, good, "/readyz/backends"); code != http.StatusOK {
		t.Errorf("all voting: %d", code)
	}
}

// TestQuorumGauges: the quorum and the backends voting now are series of
// their own, so that an alert compares one with the other.
func TestQuorumGauges(t *testing.T) {
	m := New(Options{NodeStates: fixedStates, Logger: discardLogger(), Waiting: func() int64 { return 7 }})
	_, body := getPage(t, m, "/metrics")
	for _, want := range []string{"\nredlockd_quorum 3\n", "\nredlockd_backends_voting 2\n", "\nredlockd_lock_waiters 7\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestStatusOfQuarantinedAndDown: a quarantined backend whose last look
// failed too shows the quarantine (the longer wait) and the failure.
func TestStatusOfQuarantinedAndDown(t *testing.T) {
	st := quorum.NodeState{Name: "q:1", Watched: true, Quarantined: true, QuarantinedUntil: time.Now().Add(time.Minute),
		LastError: "backend: INFO: EOF"}
	got := statusOf(st)
	if got.word != "quarantined" || !strings.Contains(got.detail, "votes again in") || !strings.HasSuffix(got.detail, "; and the last look failed: backend: INFO: EOF") {
		t.Fatalf("statusOf = %+v", got)
	}
}
