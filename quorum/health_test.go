package quorum_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// watchedNode is an engine behind a faultnode, whose "server" the test
// describes by hand, as the Redis node's INFO look would; the node may be
// failed (SetFault) and its replies watched (OnReply).
type watchedNode struct {
	*faultnode.Node
	mu  sync.Mutex
	fns []func(quorum.ServerInfo)
}

func (w *watchedNode) Watch(wt quorum.Watcher) bool {
	w.Node.Watch(quorum.Watcher{Released: wt.Released})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fns = append(w.fns, wt.Server)
	return true
}

// look reports a look at the server that tells no uptime.
func (w *watchedNode) look(runID, role string, replicas int) {
	w.report(quorum.ServerInfo{RunID: runID, Replica: role == "slave", Replicas: replicas, Uptime: -1})
}

func (w *watchedNode) report(in quorum.ServerInfo) {
	w.mu.Lock()
	fns := w.fns
	w.mu.Unlock()
	for _, fn := range fns {
		fn(in)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// watchedCluster is three watched nodes, each seen once with run_id r0..r2.
func watchedCluster(t *testing.T, quarantine time.Duration) (*quorum.Cluster, []*watchedNode, *clock) {
	t.Helper()
	c, ws, clk := unseenCluster(t, quarantine)
	for i, w := range ws {
		w.look("r"+string(rune('0'+i)), "master", 0)
	}
	return c, ws, clk
}

// unseenCluster is three watched nodes A, B, C that no look reached yet.
func unseenCluster(t *testing.T, quarantine time.Duration) (*quorum.Cluster, []*watchedNode, *clock) {
	t.Helper()
	return unseenClusterReading(t, quarantine, func(now func() time.Time) func() time.Time { return now })
}

// unseenClusterReading is unseenCluster whose Cluster reads the test
// clock through read(clock's Now).
func unseenClusterReading(t *testing.T, quarantine time.Duration, read func(func() time.Time) func() time.Time) (*quorum.Cluster, []*watchedNode, *clock) {
	t.Helper()
	clk := &clock{t: time.Now()}
	ws := make([]*watchedNode, 3)
	nodes := make([]quorum.Node, 3)
	for i := range ws {
		ws[i] = &watchedNode{Node: faultnode.Wrap(embedded.New(string(rune('A' + i))))}
		nodes[i] = ws[i]
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second
	cfg.RestartQuarantine = quarantine
	cfg.Now = read(clk.Now)
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, ws, clk
}

// lockNeedsNodeA makes B unusable, so that an acquire succeeds only if A's
// vote counts.
func lockNeedsNodeA(ws []*watchedNode) { ws[1].SetFault(errors.New("B is down")) }

func TestRestartQuarantine(t *testing.T) {
	tests := []struct {
		name       string
		quarantine time.Duration
		wait       time.Duration // clock advance after the restart
		wantErr    error
	}{
		{"quarantined", time.Minute, 0, quorum.ErrQuarantined},
		{"still quarantined just before the end", time.Minute, time.Minute - time.Millisecond, quorum.ErrQuarantined},
		{"votes again after the quarantine", time.Minute, time.Minute, nil},
		{"negative control: quarantine off", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ws, clk := watchedCluster(t, tt.quarantine)
			lockNeedsNodeA(ws)
			ws[0].look("r0-restarted", "master", 0)
			clk.advance(tt.wait)
			_, err := c.Acquire(context.Background(), "k", "tok", time.Second)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Acquire = %v, want %v", err, tt.wantErr)
			}
			st := c.NodeStates()[0]
			if want := tt.wantErr != nil; st.Quarantined != want || !st.Up || st.RunID != "r0-restarted" {
				t.Errorf("NodeStates()[0] = %+v, want Quarantined %v", st, want)
			}
		})
	}
}

// TestQuarantineCheckedAfterTheCall: a restart noticed while the call was
// in flight (a new connection's look) discards that call's vote.
func TestQuarantineCheckedAfterTheCall(t *testing.T) {
	for _, quarantine := range []time.Duration{time.Minute, 0} {
		c, ws, _ := watchedCluster(t, quarantine)
		lockNeedsNodeA(ws)
		// A restart noticed inside SetNX, after the write, while the
		// operation is in flight.
		ws[0].OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
			if cmd.Kind == quorum.SetNX {
				ws[0].look("r0-restarted", "master", 0)
			}
		})
		_, err := c.Acquire(context.Background(), "k", "tok", time.Second)
		if quarantine > 0 && !errors.Is(err, quorum.ErrQuarantined) {
			t.Errorf("quarantine on: Acquire = %v, want ErrQuarantined", err)
		}
		if quarantine == 0 && err != nil {
			t.Errorf("negative control, quarantine off: Acquire = %v, want the lock", err)
		}
	}
}

func TestRefuseDependentNodes(t *testing.T) {
	tests := []struct {
		name   string
		look   func(ws []*watchedNode)
		refuse int // index of the refused node, -1: none
		reason string
	}{
		{"independent masters", func(ws []*watchedNode) {}, -1, ""},
		{"same server twice", func(ws []*watchedNode) { ws[2].look("r0", "master", 0) }, 2, "same server as A"},
		{"replica", func(ws []*watchedNode) { ws[1].look("r1", "slave", 0) }, 1, "replica"},
		{"master with replicas is only warned about", func(ws []*watchedNode) { ws[1].look("r1", "master", 2) }, -1, ""},
		{"refusal lifted when the server changes", func(ws []*watchedNode) {
			ws[2].look("r0", "master", 0)
			ws[2].look("r2-new", "master", 0)
		}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ws, _ := watchedCluster(t, 0)
			tt.look(ws)
			for i, st := range c.NodeStates() {
				if refused := st.Refused != ""; refused != (i == tt.refuse) {
					t.Errorf("node %s: Refused = %q", st.Name, st.Refused)
				}
				if i == tt.refuse && !strings.Contains(st.Refused, tt.reason) {
					t.Errorf("node %s: Refused = %q, want it to mention %q", st.Name, st.Refused, tt.reason)
				}
			}
			if tt.refuse < 0 {
				return
			}
			// The refused node and one more down: its vote must not make a majority.
			ws[(tt.refuse+1)%3].SetFault(errors.New("down"))
			if _, err := c.Acquire(context.Background(), "k", "tok", time.Second); !errors.Is(err, quorum.ErrRefused) {
				t.Errorf("Acquire = %v, want ErrRefused among the reasons", err)
			}
		})
	}
}

func TestNodeStatesOfUnwatchedNodes(t *testing.T) {
	c, err := quorum.New(memNodes(3), quorum.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range c.NodeStates() {
		if st.Watched || !st.Up || st.Quarantined || st.Refused != "" {
			t.Errorf("in-memory node state = %+v", st)
		}
	}
}
