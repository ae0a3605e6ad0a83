package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// A backend that is a Redis Cluster reports each shard's up and
// quarantine gauges, labelled with the backend and the shard.
func TestShardGauges(t *testing.T) {
	until := time.Now().Add(time.Minute)
	st := quorum.NodeState{Name: "cluster://a:1", Watched: true, Up: true, Shards: []quorum.ShardState{
		{Name: "a:1", Master: "a:1", Up: true},
		{Name: "a:2", Master: "a:4", Up: true, Quarantined: true, QuarantinedUntil: until},
	}}
	m := New(Options{Backends: []string{st.Name}, Version: "test",
		NodeStates: func() []quorum.NodeState { return []quorum.NodeState{st} }})
	_, body := getPage(t, m, "/metrics")
	for _, want := range []string{
		`redlockd_backend_quarantined{backend="cluster://a:1",shard="a:2"} 1`,
		`redlockd_backend_quarantined{backend="cluster://a:1",shard="a:1"} 0`,
		`redlockd_backend_up{backend="cluster://a:1",shard="a:1"} 1`,
		`redlockd_backend_quarantined{backend="cluster://a:1"} 0`,
		`redlockd_backend_quarantine_seconds{backend="cluster://a:1"} 0`,
		`redlockd_backend_quarantine_seconds{backend="cluster://a:1",shard="a:1"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
	// The quarantined shard's seconds left are those of its deadline.
	left := gaugeValue(t, body, `redlockd_backend_quarantine_seconds{backend="cluster://a:1",shard="a:2"}`)
	if left <= 0 || left > time.Minute.Seconds() {
		t.Fatalf("quarantined shard has %v seconds left, want in (0, 60]", left)
	}
	// A shard is never counted as a backend: the only series without a
	// shard label are the backend's.
	if strings.Contains(body, `backend="cluster://a:1/`) {
		t.Fatalf("/metrics still names a shard as a backend:\n%s", body)
	}
}

// gaugeValue is the value of the one series line starting with series.
func gaugeValue(t *testing.T, body, series string) float64 {
	t.Helper()
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics lacks %s:\n%s", series, body)
	return 0
}
