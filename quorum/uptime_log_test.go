package quorum_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/logbuf"
)

// lookNode is a node that only reports looks at its server: enough for
// the health record, which is all this test reads.
type lookNode struct {
	name string
	mu   sync.Mutex
	w    quorum.Watcher
}

func (n *lookNode) Name() string { return n.name }
func (n *lookNode) Do(_ time.Time, _ quorum.Cmd, r quorum.Receiver) {
	r.Receive(quorum.Reply{Err: quorum.ErrNoQuorum})
}
func (n *lookNode) Close() error { return nil }
func (n *lookNode) Watch(w quorum.Watcher) bool {
	n.mu.Lock()
	n.w = w
	n.mu.Unlock()
	return true
}
func (n *lookNode) look(info quorum.ServerInfo) {
	n.mu.Lock()
	w := n.w
	n.mu.Unlock()
	w.Server(info)
}

// TestYoungBackendLogsWholeSeconds: a backend's uptime comes from INFO in
// whole seconds, and the start-up quarantine's log line says it so
// ("uptime=0s" for a server that just started, not "uptime=501ns").
func TestYoungBackendLogsWholeSeconds(t *testing.T) {
	var out logbuf.Buffer
	nodes := []*lookNode{{name: "A"}, {name: "B"}, {name: "C"}}
	cfg := quorum.DefaultConfig()
	cfg.RestartQuarantine = time.Minute
	cfg.Logger = slog.New(slog.NewTextHandler(&out, nil))
	c, err := quorum.New([]quorum.Node{nodes[0], nodes[1], nodes[2]}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes[1].look(quorum.ServerInfo{RunID: "rb", Uptime: time.Hour})
	nodes[2].look(quorum.ServerInfo{RunID: "rc", Uptime: time.Hour})
	nodes[0].look(quorum.ServerInfo{RunID: "ra", Uptime: 0})
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
