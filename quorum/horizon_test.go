package quorum_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// horizonNode is a watched node that records the ttl of every raise of
// its horizon that it answered (failed ones too); setFail fails those
// raises (faultnode.SetOpFault).
type horizonNode struct {
	*watchedNode
	mu     sync.Mutex
	raises []time.Duration
}

func newHorizonNode(name string) *horizonNode {
	h := &horizonNode{watchedNode: &watchedNode{Node: faultnode.Wrap(embedded.New(name))}}
	h.OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
		if cmd.Kind == quorum.RaiseHorizon {
			h.mu.Lock()
			h.raises = append(h.raises, cmd.TTL)
			h.mu.Unlock()
		}
	})
	return h
}

func (h *horizonNode) setFail(err error) { h.SetOpFault("RaiseHorizon", err) }

// raised lists the raises asked of h so far, once each is answered.
func (h *horizonNode) raised(t *testing.T) []time.Duration {
	t.Helper()
	h.WaitAnswered(t, "RaiseHorizon", h.Calls("RaiseHorizon"))
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.raises...)
}

// horizonCluster is three watched in-memory nodes A, B, C, seen once, with
// the given quarantine and a MaxTTL of an hour.
func horizonCluster(t *testing.T, quarantine time.Duration) (*quorum.Cluster, []*horizonNode, *clock) {
	t.Helper()
	clk := &clock{t: time.Now()}
	rs := make([]*horizonNode, 3)
	nodes := make([]quorum.Node, 3)
	for i := range rs {
		rs[i] = newHorizonNode(string(rune('A' + i)))
		nodes[i] = rs[i]
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second
	cfg.MaxTTL = time.Hour
	cfg.RestartQuarantine = quarantine
	cfg.Now = clk.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i, r := range rs {
		r.look("r"+string(rune('0'+i)), "master", 0)
	}
	return c, rs, clk
}

// horizonOf is the remaining ttl of n's horizon, 0 when it has none.
func horizonOf(t *testing.T, n quorum.Node) time.Duration {
	t.Helper()
	rep := quorum.Call(context.Background(), n, quorum.Cmd{Kind: quorum.ReadHorizon, Key: quorum.HorizonKey})
	if rep.Err != nil {
		t.Fatalf("ReadHorizon on %s: %v", n.Name(), rep.Err)
	}
	return rep.TTL
}

// TestHorizonRaiseFailedVoteDoesNotCount: a node whose horizon could not
// be raised to cover a grant does not count as a yes for it, so a grant
// that needs its vote fails; with the raise working it succeeds.
func TestHorizonRaiseFailedVoteDoesNotCount(t *testing.T) {
	c, rs, _ := horizonCluster(t, time.Minute)
	rs[1].SetFault(errors.New("B is down"))
	rs[0].setFail(errors.New("raise refused"))
	_, err := c.Acquire(context.Background(), "k", "t1", time.Second)
	if !errors.Is(err, quorum.ErrHorizon) {
		t.Fatalf("Acquire with A's raise failing = %v, want ErrHorizon among the reasons", err)
	}
	rs[0].setFail(nil)
	if _, err := c.Acquire(context.Background(), "k", "t2", time.Second); err != nil {
		t.Fatalf("negative control, A's raise working: Acquire = %v", err)
	}
	if h := horizonOf(t, rs[0]); h < time.Second {
		t.Fatalf("A's horizon %v after a 1s grant", h)
	}
}

// TestHorizonRaisedOnlyWhenOutlived: a grant within the horizon known to
// the proxy costs no raise; one that outlives it raises the horizon, with
// slack (twice the ttl) capped at MaxTTL plus a second.
func TestHorizonRaisedOnlyWhenOutlived(t *testing.T) {
	c, rs, clk := horizonCluster(t, time.Minute)
	ctx := context.Background()
	for i := range 20 {
		key := "k" + string(rune('a'+i))
		if _, err := c.Acquire(ctx, key, "t", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		clk.advance(100 * time.Millisecond)
	}
	for _, r := range rs {
		if got := r.raised(t); len(got) != 1 || got[0] < 20*time.Second {
			t.Fatalf("%s raised %v for 20 similar 10s grants, want one raise of at least 20s", r.Name(), got)
		}
	}
	if _, err := c.Acquire(ctx, "long", "t", 50*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		got := r.raised(t)
		if len(got) != 2 || got[1] < 50*time.Minute || got[1] > time.Hour+time.Second {
			t.Fatalf("%s raised %v, want a second raise between 50m and MaxTTL+1s", r.Name(), got)
		}
		if h := horizonOf(t, r); h < 50*time.Minute {
			t.Fatalf("%s horizon %v after a 50m grant", r.Name(), h)
		}
	}
}

// TestHorizonCoversEveryGrowth: every operation that can make a lock's
// expiry grow leaves every node's horizon covering it.
func TestHorizonCoversEveryGrowth(t *testing.T) {
	c, rs, _ := horizonCluster(t, time.Minute)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	steps := []struct {
		name string
		ttl  time.Duration
		run  func(ttl time.Duration) error
	}{
		{"acquire", time.Minute, func(d time.Duration) error { _, err := c.Acquire(ctx, "k", "t", d); return err }},
		{"extend", 3 * time.Minute, func(d time.Duration) error { _, err := c.Extend(ctx, "k", "t", d); return err }},
		{"extend-add", 8 * time.Minute, func(d time.Duration) error {
			_, err := c.ExtendAdd(ctx, "k", "t", 5*time.Minute, time.Hour)
			return err
		}},
		{"pexpire", 12 * time.Minute, func(d time.Duration) error { _, err := c.Expire(ctx, "k", d); return err }},
		{"force set", 15 * time.Minute, func(d time.Duration) error { _, err := c.ForceSet(ctx, "k", "t", d); return err }},
		{"renew kept", 18 * time.Minute, func(d time.Duration) error { _, err := c.RenewKept(ctx, "k", "t", d); return err }},
		{"extend or acquire", 21 * time.Minute, func(d time.Duration) error { _, err := c.ExtendOrAcquire(ctx, "k", "t", d); return err }},
		{"multi-key", 24 * time.Minute, func(d time.Duration) error {
			_, err := c.AcquireAll(ctx, []string{"m1", "m2"}, "t", d)
			return err
		}},
		{"multi-key extend", 27 * time.Minute, func(d time.Duration) error {
			_, err := c.ExtendAll(ctx, []string{"m1", "m2"}, "t", d)
			return err
		}},
		{"owner hold", 40 * time.Minute, func(d time.Duration) error { _, err := c.LockOwner(ctx, "o", "id1", d); return err }},
	}
	for _, s := range steps {
		must(s.name, s.run(s.ttl))
		for _, r := range rs {
			if h := horizonOf(t, r); h < s.ttl-time.Second {
				t.Fatalf("after %s to %v: %s's horizon is %v", s.name, s.ttl, r.Name(), h)
			}
		}
	}
}

// TestAutoQuarantineFollowsHorizons: under QuarantineAuto a restarted node
// sits out as long as the longest horizon among the other nodes, not the
// MaxTTL cap; a fixed quarantine keeps its length.
func TestAutoQuarantineFollowsHorizons(t *testing.T) {
	for _, tc := range []struct {
		name       string
		quarantine time.Duration
		lo, hi     time.Duration
	}{
		{"auto", quorum.QuarantineAuto, 10 * time.Minute, 21 * time.Minute},
		{"fixed", 5 * time.Minute, 5 * time.Minute, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rs, clk := horizonCluster(t, tc.quarantine)
			if _, err := c.Acquire(context.Background(), "k", "t", 10*time.Minute); err != nil {
				t.Fatal(err)
			}
			now := clk.Now()
			rs[0].look("r0-restarted", "master", 0)
			st := c.NodeStates()[0]
			left := st.QuarantinedUntil.Sub(now)
			if !st.Quarantined || st.QuarantinePending || left < tc.lo || left > tc.hi {
				t.Fatalf("after the restart: %+v, %v left, want %v..%v", st, left, tc.lo, tc.hi)
			}
			rs[1].SetFault(errors.New("B is down"))
			if _, err := c.Acquire(context.Background(), "k2", "t", time.Second); !errors.Is(err, quorum.ErrQuarantined) {
				t.Fatalf("Acquire needing A = %v, want ErrQuarantined", err)
			}
		})
	}
}

// TestAutoQuarantineInconclusive: when no other node answers, the
// quarantine is the proxy's own record, and the cap where it granted
// nothing; it stays pending until a read is conclusive.
func TestAutoQuarantineInconclusive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grant  bool
		lo, hi time.Duration
	}{
		{"own record", true, 2 * time.Minute, 3 * time.Minute},
		{"nothing granted: the cap", false, time.Hour, time.Hour + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rs, clk := horizonCluster(t, quorum.QuarantineAuto)
			if tc.grant {
				if _, err := c.Acquire(context.Background(), "k", "t", 2*time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			rs[1].SetFault(errors.New("B is down"))
			rs[2].SetFault(errors.New("C is down"))
			now := clk.Now()
			rs[0].look("r0-restarted", "master", 0)
			st := c.NodeStates()[0]
			left := st.QuarantinedUntil.Sub(now)
			if !st.Quarantined || !st.QuarantinePending || left < tc.lo || left > tc.hi {
				t.Fatalf("after the restart with B and C down: %+v, %v left, want pending, %v..%v", st, left, tc.lo, tc.hi)
			}
			rs[1].SetFault(nil)
			rs[2].SetFault(nil)
			rs[2].look("r2", "master", 0) // any later look reads again
			if st := c.NodeStates()[0]; st.QuarantinePending {
				t.Fatalf("after B answers again: %+v, want a conclusive quarantine", st)
			}
		})
	}
}

// TestAutoQuarantineOtherServerBehindTheAddress: a new run_id whose server
// has been up for two days is another server now answering at the node's
// address (or a promoted replica): it took over just now, so its
// quarantine covers the locks the old one held, not a cap counted from
// two days ago.
func TestAutoQuarantineOtherServerBehindTheAddress(t *testing.T) {
	c, rs, clk := horizonCluster(t, quorum.QuarantineAuto)
	if _, err := c.Acquire(context.Background(), "k", "t", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	rs[0].report(quorum.ServerInfo{RunID: "other-server", Uptime: 48 * time.Hour})
	st := c.NodeStates()[0]
	if left := st.QuarantinedUntil.Sub(now); !st.Quarantined || left < 10*time.Minute {
		t.Fatalf("after another server took the address: %+v, %v left, want the 10m lock covered", st, left)
	}
}
