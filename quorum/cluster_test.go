package quorum_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
)

func TestQuorum(t *testing.T) {
	want := map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4}
	for n := 1; n <= 7; n++ {
		if got := quorum.Quorum(n); got != want[n] {
			t.Errorf("Quorum(%d) = %d, want %d", n, got, want[n])
		}
		if q := quorum.Quorum(n); 2*q <= n {
			t.Errorf("Quorum(%d) = %d is not a strict majority", n, q)
		}
		_, nodes := newNodes(n)
		if got := newCluster(t, nodes, testConfig()).Quorum(); got != want[n] {
			t.Errorf("Cluster(%d nodes).Quorum() = %d, want %d", n, got, want[n])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := quorum.DefaultConfig()
	tests := []struct {
		name    string
		mod     func(*quorum.Config)
		wantErr bool
	}{
		{"defaults", func(*quorum.Config) {}, false},
		{"zero retry delays", func(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = 0, 0 }, false},
		{"equal retry delays", func(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = 7, 7 }, false},
		{"zero drift", func(c *quorum.Config) { c.DriftFactor = 0 }, false},
		{"zero node timeout", func(c *quorum.Config) { c.NodeTimeout = 0 }, true},
		{"negative node timeout", func(c *quorum.Config) { c.NodeTimeout = -time.Millisecond }, true},
		{"negative drift", func(c *quorum.Config) { c.DriftFactor = -0.01 }, true},
		{"drift one", func(c *quorum.Config) { c.DriftFactor = 1 }, true},
		{"drift above one", func(c *quorum.Config) { c.DriftFactor = 2 }, true},
		{"drift +Inf", func(c *quorum.Config) { c.DriftFactor = math.Inf(1) }, true},
		{"drift -Inf", func(c *quorum.Config) { c.DriftFactor = math.Inf(-1) }, true},
		{"drift NaN", func(c *quorum.Config) { c.DriftFactor = math.NaN() }, true},
		{"negative retry min", func(c *quorum.Config) { c.RetryDelayMin = -1 }, true},
		{"retry max below min", func(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = 10, 9 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "quorum: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			_, nodes := newNodes(3)
			if _, nerr := quorum.New(nodes, c); (nerr != nil) != tt.wantErr {
				t.Errorf("New() = %v, wantErr %v", nerr, tt.wantErr)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := quorum.New(nil, quorum.DefaultConfig()); err == nil {
		t.Error("New(nil) succeeded, want an error")
	}
	if _, err := quorum.New([]quorum.Node{}, quorum.DefaultConfig()); err == nil {
		t.Error("New(empty) succeeded, want an error")
	}

	_, nodes := newNodes(3)
	cfg := testConfig()
	cfg.Now = nil
	c := newCluster(t, nodes, cfg)
	if c.Config().Now == nil {
		t.Error("New left Config.Now nil; want time.Now")
	}
	if c.Config().NodeTimeout != cfg.NodeTimeout {
		t.Errorf("Config().NodeTimeout = %v, want %v", c.Config().NodeTimeout, cfg.NodeTimeout)
	}

	// The cluster keeps its own copy of the node list, and hands out copies.
	nodes[0] = embedded.New("intruder")
	got := c.Nodes()
	if got[0].Name() != "n0" {
		t.Errorf("cluster follows the caller's slice: Nodes()[0] = %s", got[0].Name())
	}
	got[1] = embedded.New("intruder")
	if c.Nodes()[1].Name() != "n1" {
		t.Error("Nodes() returns the cluster's own slice")
	}
	if len(got) != 3 {
		t.Errorf("len(Nodes()) = %d, want 3", len(got))
	}
}

func TestJitter(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		min, max time.Duration
	}{
		{"defaults", 5 * ms, 50 * ms},
		{"equal", 7 * ms, 7 * ms},
		{"zero", 0, 0},
		{"from zero", 0, 3 * ms},
		{"narrow", 10 * ms, 10*ms + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.RetryDelayMin, cfg.RetryDelayMax = tt.min, tt.max
			_, nodes := newNodes(1)
			c := newCluster(t, nodes, cfg)
			lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
			for range 20_000 {
				d := c.Jitter()
				if d < tt.min || d > tt.max {
					t.Fatalf("jitter() = %v outside [%v, %v]", d, tt.min, tt.max)
				}
				lo, hi = min(lo, d), max(hi, d)
			}
			// The draw is spread over the range, not stuck at one end. With
			// 20k uniform draws, missing the outer 10% at either end has
			// probability far below 1e-100.
			span := tt.max - tt.min
			if lo > tt.min+span/10 || hi < tt.max-span/10 {
				t.Errorf("jitter() ranged over [%v, %v], want it to cover [%v, %v]", lo, hi, tt.min, tt.max)
			}
		})
	}
}

// A round's launch time starts its validity only when the clock is
// time.Now: a Config's own clock (a test's, say) is read for it.
func TestRealClockDetected(t *testing.T) {
	_, nodes := newNodes(3)
	if c := newCluster(t, nodes, quorum.DefaultConfig()); !c.RealClock() {
		t.Error("DefaultConfig's clock not seen as time.Now")
	}
	cfg := testConfig()
	cfg.Now = nil
	if c := newCluster(t, nodes, cfg); !c.RealClock() {
		t.Error("a nil clock not seen as time.Now")
	}
	cfg.Now = newStepClock(time.Millisecond).Now
	if c := newCluster(t, nodes, cfg); c.RealClock() {
		t.Error("a fake clock seen as time.Now")
	}
}
