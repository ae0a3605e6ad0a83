package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// A backend that is a Redis Cluster reports each shard's up and
// quarantine gauges, labelled "<backend>/<shard>".
func TestShardGauges(t *testing.T) {
	until := time.Now().Add(time.Minute)
	st := quorum.NodeState{Name: "cluster://a:1", Watched: true, Up: true, Shards: []quorum.ShardState{
		{Name: "a:1", Master: "a:1", Up: true},
		{Name: "a:2", Master: "a:4", Up: true, Quarantined: true, QuarantinedUntil: until},
	}}
	m := New(Options{Backends: []string{st.Name}, Version: "test",
		NodeStates: func() []quorum.NodeState { return []quorum.NodeState{st} }})
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`redlockd_backend_quarantined{backend="cluster://a:1/a:2"} 1`,
		`redlockd_backend_quarantined{backend="cluster://a:1/a:1"} 0`,
		`redlockd_backend_up{backend="cluster://a:1/a:1"} 1`,
		`redlockd_backend_quarantined{backend="cluster://a:1"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
