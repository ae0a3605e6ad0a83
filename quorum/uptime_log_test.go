package quorum_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/logbuf"
)

// TestYoungBackendLogsWholeSeconds: a backend's uptime comes from INFO in
// whole seconds, and the start-up quarantine's log line says it so
// ("uptime=0s" for a server that just started, not "uptime=501ns").
func TestYoungBackendLogsWholeSeconds(t *testing.T) {
	var out logbuf.Buffer
	// The nodes fail every command: only their looks reach the health
	// record, which is all this test reads.
	var nodes []*watchedNode
	for _, name := range []string{"A", "B", "C"} {
		w := &watchedNode{Node: faultnode.Wrap(embedded.New(name))}
		w.SetFault(quorum.ErrNoQuorum)
		t.Cleanup(func() { w.Close() })
		nodes = append(nodes, w)
	}
	cfg := quorum.DefaultConfig()
	cfg.RestartQuarantine = time.Minute
	cfg.Logger = slog.New(slog.NewTextHandler(&out, nil))
	c, err := quorum.New([]quorum.Node{nodes[0], nodes[1], nodes[2]}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes[1].report(quorum.ServerInfo{RunID: "rb", Uptime: time.Hour})
	nodes[2].report(quorum.ServerInfo{RunID: "rc", Uptime: time.Hour})
	nodes[0].report(quorum.ServerInfo{RunID: "ra", Uptime: 0})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "backend=A uptime=") {
		if time.Now().After(deadline) {
			t.Fatalf("no start-up quarantine line for A:\n%s", out.String())
		}
		time.Sleep(time.Millisecond) // the line is written after the record's lock is let go
	}
	if !strings.Contains(out.String(), "backend=A uptime=0s ") {
		t.Fatalf("uptime not in whole seconds:\n%s", out.String())
	}
}
