package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

const (
	young = 10 * time.Second
	old   = 5 * time.Minute
)

// firstLooks feeds each node's first look, in the given order, with the
// node's uptime (negative: not reported).
func firstLooks(ws []*watchedNode, uptimes []time.Duration, order []int) {
	for _, i := range order {
		ws[i].report(quorum.ServerInfo{RunID: "r" + ws[i].Name(), Uptime: uptimes[i]})
	}
}

// TestStartupQuarantine: a proxy that starts after a backend restarted did
// not see its run_id change; a backend younger than the quarantine among
// older ones sits out the votes for the rest of its quarantine.
func TestStartupQuarantine(t *testing.T) {
	const q = time.Minute
	tests := []struct {
		name       string
		quarantine time.Duration
		uptimes    []time.Duration // of A, B, C
		want       []time.Duration // quarantine left per node, 0: none
	}{
		{"young among old", q, []time.Duration{young, old, old}, []time.Duration{q - young, 0, 0}},
		{"young among one old and one young", q, []time.Duration{young, 2 * young, old}, []time.Duration{q - young, q - 2*young, 0}},
		{"all young: a new cluster", q, []time.Duration{young, 0, 2 * young}, []time.Duration{0, 0, 0}},
		{"all old", q, []time.Duration{old, q, old}, []time.Duration{0, 0, 0}},
		{"uptime not reported counts as neither", q, []time.Duration{young, -1, -1}, []time.Duration{0, 0, 0}},
		{"negative control: quarantine off", 0, []time.Duration{young, old, old}, []time.Duration{0, 0, 0}},
	}
	orders := [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}}
	for _, tt := range tests {
		for _, order := range orders {
			t.Run(tt.name, func(t *testing.T) {
				c, ws, clk := unseenCluster(t, tt.quarantine)
				firstLooks(ws, tt.uptimes, order)
				now := clk.Now()
				for i, st := range c.NodeStates() {
					if left := st.QuarantinedUntil.Sub(now); max(left, 0) != tt.want[i] || st.Quarantined != (tt.want[i] > 0) {
						t.Errorf("order %v: node %s quarantined %v for %v, want %v", order, st.Name, st.Quarantined, left, tt.want[i])
					}
				}
			})
		}
	}
}

// TestStartupQuarantineVotes: the young node's vote does not count until
// its start plus the quarantine, and counts from then on.
func TestStartupQuarantineVotes(t *testing.T) {
	tests := []struct {
		name       string
		quarantine time.Duration
		uptimeA    time.Duration
		wait       time.Duration // clock advance after the first looks
		wantErr    error
	}{
		{"young among old", time.Minute, young, 0, quorum.ErrQuarantined},
		{"just before its quarantine ends", time.Minute, young, time.Minute - young - time.Millisecond, quorum.ErrQuarantined},
		{"votes once it ends", time.Minute, young, time.Minute - young, nil},
		{"old enough", time.Minute, time.Minute, 0, nil},
		{"negative control: quarantine off", 0, young, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ws, clk := unseenCluster(t, tt.quarantine)
			firstLooks(ws, []time.Duration{tt.uptimeA, old, old}, []int{0, 1, 2})
			lockNeedsNodeA(ws)
			clk.advance(tt.wait)
			_, err := c.Acquire(context.Background(), "k", "tok", time.Second)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Acquire = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestStartupQuarantineLateOldPeer: a young node first seen among young
// peers votes; when an old peer's first look arrives later, the young node
// sits out the rest of its quarantine, counted from its start.
func TestStartupQuarantineLateOldPeer(t *testing.T) {
	c, ws, clk := unseenCluster(t, time.Minute)
	firstLooks(ws, []time.Duration{young, young, 0}, []int{0, 1})
	if st := c.NodeStates()[0]; st.Quarantined {
		t.Fatalf("A among young peers: %+v", st)
	}
	clk.advance(5 * time.Second)
	firstLooks(ws, []time.Duration{0, 0, old}, []int{2})
	for i, st := range c.NodeStates()[:2] {
		if want := clk.Now().Add(time.Minute - young - 5*time.Second); !st.QuarantinedUntil.Equal(want) {
			t.Errorf("node %d quarantined until %v, want %v", i, st.QuarantinedUntil, want)
		}
	}
}

// TestStartupQuarantineKeepsLongerRestartQuarantine: a restart seen by
// this proxy keeps its full quarantine when a later first look applies
// the shorter start-up one.
func TestStartupQuarantineKeepsLongerRestartQuarantine(t *testing.T) {
	c, ws, clk := unseenCluster(t, time.Minute)
	firstLooks(ws, []time.Duration{young, young, 0}, []int{0, 1})
	clk.advance(5 * time.Second)
	ws[0].report(quorum.ServerInfo{RunID: "rA-restarted", Uptime: 0})
	want := clk.Now().Add(time.Minute)
	clk.advance(5 * time.Second)
	firstLooks(ws, []time.Duration{0, 0, old}, []int{2})
	if st := c.NodeStates()[0]; !st.QuarantinedUntil.Equal(want) {
		t.Errorf("A quarantined until %v, want %v", st.QuarantinedUntil, want)
	}
}
