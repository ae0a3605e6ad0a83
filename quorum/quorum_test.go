package quorum

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

func TestQuorum(t *testing.T) {
	want := map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4}
	for n := 1; n <= 7; n++ {
		if got := Quorum(n); got != want[n] {
			t.Errorf("Quorum(%d) = %d, want %d", n, got, want[n])
		}
		if q := Quorum(n); 2*q <= n {
			t.Errorf("Quorum(%d) = %d is not a strict majority", n, q)
		}
		_, nodes := newFakes(n)
		if got := newCluster(t, nodes, testConfig()).Quorum(); got != want[n] {
			t.Errorf("Cluster(%d nodes).Quorum() = %d, want %d", n, got, want[n])
		}
	}
}

func TestValidity(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		ttl     time.Duration
		elapsed time.Duration
		drift   float64
		want    time.Duration
	}{
		{"default drift", 1000 * ms, 0, 0.01, 988 * ms},
		{"elapsed subtracted", 1000 * ms, 100 * ms, 0.01, 888 * ms},
		{"zero drift factor still 2ms", 1000 * ms, 0, 0, 998 * ms},
		{"exactly zero", 1000 * ms, 988 * ms, 0.01, 0},
		{"negative", 1000 * ms, 989 * ms, 0.01, -ms},
		{"large ttl", 60 * time.Second, 50 * ms, 0.01, 60*time.Second - 50*ms - 602*ms},
		{"tiny ttl below fixed drift", ms, 0, 0.01, ms - 10*time.Microsecond - 2*ms},
		{"bigger factor", 10 * time.Second, time.Second, 0.1, 8*time.Second - 2*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Validity(tt.ttl, tt.elapsed, tt.drift); got != tt.want {
				t.Errorf("Validity(%v, %v, %v) = %v, want %v", tt.ttl, tt.elapsed, tt.drift, got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr bool
	}{
		{"defaults", func(*Config) {}, false},
		{"zero retry delays", func(c *Config) { c.RetryDelayMin, c.RetryDelayMax = 0, 0 }, false},
		{"equal retry delays", func(c *Config) { c.RetryDelayMin, c.RetryDelayMax = 7, 7 }, false},
		{"zero drift", func(c *Config) { c.DriftFactor = 0 }, false},
		{"zero node timeout", func(c *Config) { c.NodeTimeout = 0 }, true},
		{"negative node timeout", func(c *Config) { c.NodeTimeout = -time.Millisecond }, true},
		{"negative drift", func(c *Config) { c.DriftFactor = -0.01 }, true},
		{"drift one", func(c *Config) { c.DriftFactor = 1 }, true},
		{"drift above one", func(c *Config) { c.DriftFactor = 2 }, true},
		{"drift +Inf", func(c *Config) { c.DriftFactor = math.Inf(1) }, true},
		{"drift -Inf", func(c *Config) { c.DriftFactor = math.Inf(-1) }, true},
		{"drift NaN", func(c *Config) { c.DriftFactor = math.NaN() }, true},
		{"negative retry min", func(c *Config) { c.RetryDelayMin = -1 }, true},
		{"retry max below min", func(c *Config) { c.RetryDelayMin, c.RetryDelayMax = 10, 9 }, true},
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
			_, nodes := newFakes(3)
			if _, nerr := New(nodes, c); (nerr != nil) != tt.wantErr {
				t.Errorf("New() = %v, wantErr %v", nerr, tt.wantErr)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.NodeTimeout != 50*time.Millisecond || c.DriftFactor != 0.01 ||
		c.RetryDelayMin != 5*time.Millisecond || c.RetryDelayMax != 50*time.Millisecond || c.Now == nil {
		t.Errorf("DefaultConfig() = %+v, not the documented defaults", c)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(nil, DefaultConfig()); err == nil {
		t.Error("New(nil) succeeded, want an error")
	}
	if _, err := New([]Node{}, DefaultConfig()); err == nil {
		t.Error("New(empty) succeeded, want an error")
	}

	_, nodes := newFakes(3)
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
	nodes[0] = newFakeNode("intruder")
	got := c.Nodes()
	if got[0].Name() != "n0" {
		t.Errorf("cluster follows the caller's slice: Nodes()[0] = %s", got[0].Name())
	}
	got[1] = newFakeNode("intruder")
	if c.Nodes()[1].Name() != "n1" {
		t.Error("Nodes() returns the cluster's own slice")
	}
	if len(got) != 3 {
		t.Errorf("len(Nodes()) = %d, want 3", len(got))
	}
}

func TestNoQuorumError(t *testing.T) {
	var errs *multierror.Error
	errs = multierror.Append(errs, &NodeError{Node: "a:1", Err: errors.New("dial tcp: refused")})
	errs = multierror.Append(errs, &NodeError{Node: "b:2", Err: errors.New("line one\r\nline two")})
	e := &NoQuorumError{Answered: 1, Total: 3, Errs: errs}

	if want := "a:1: dial tcp: refused; b:2: line one  line two"; e.Reasons() != want {
		t.Errorf("Reasons() = %q, want %q", e.Reasons(), want)
	}
	if !strings.HasPrefix(e.Error(), "1 of 3 backends answered: a:1: ") {
		t.Errorf("Error() = %q", e.Error())
	}
	if strings.ContainsAny(e.Error(), "\r\n") {
		t.Errorf("Error() spans lines: %q", e.Error())
	}
	if !errors.Is(e, ErrNoQuorum) {
		t.Error("errors.Is(e, ErrNoQuorum) = false")
	}
	if errors.Is(e, ErrNotAcquired) || errors.Is(e, ErrNotHeld) {
		t.Error("NoQuorumError matches a contention sentinel")
	}
	var ne *NodeError
	if !errors.As(e, &ne) || ne.Node != "a:1" {
		t.Errorf("errors.As(NodeError) = %v", ne)
	}

	empty := &NoQuorumError{Answered: 0, Total: 1}
	if empty.Reasons() != "" || empty.Unwrap() != nil || !errors.Is(empty, ErrNoQuorum) {
		t.Errorf("NoQuorumError without Errs: Reasons %q Unwrap %v", empty.Reasons(), empty.Unwrap())
	}
}

func TestNodeError(t *testing.T) {
	inner := errors.New("x")
	e := &NodeError{Node: "n", Err: inner}
	if e.Error() != "n: x" || !errors.Is(e, inner) {
		t.Errorf("NodeError = %q, Is(inner) = %v", e.Error(), errors.Is(e, inner))
	}
}

func TestSentinelsArePrefixed(t *testing.T) {
	for _, err := range []error{ErrNotAcquired, ErrNotHeld, ErrNoQuorum, ErrInvalidTTL} {
		if !strings.HasPrefix(err.Error(), "quorum: ") {
			t.Errorf("%q lacks the package prefix", err)
		}
	}
}

var tokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestNewTokenFormatAndUnique(t *testing.T) {
	const n = 100_000
	seen := make(map[string]struct{}, n)
	for range n {
		tok := NewToken()
		if !tokenRE.MatchString(tok) {
			t.Fatalf("NewToken() = %q, want 32 lower-case hex chars", tok)
		}
		if _, dup := seen[tok]; dup {
			t.Fatalf("NewToken() repeated %q", tok)
		}
		seen[tok] = struct{}{}
	}
}

func TestNewTokenConcurrent(t *testing.T) {
	const workers, per = 8, 5_000
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			toks := make([]string, per)
			for i := range toks {
				toks[i] = NewToken()
			}
			out[w] = toks
		}()
	}
	wg.Wait()
	seen := make(map[string]struct{}, workers*per)
	for _, toks := range out {
		for _, tok := range toks {
			if !tokenRE.MatchString(tok) {
				t.Fatalf("bad token %q", tok)
			}
			if _, dup := seen[tok]; dup {
				t.Fatalf("duplicate token %q across goroutines", tok)
			}
			seen[tok] = struct{}{}
		}
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
			_, nodes := newFakes(1)
			c := newCluster(t, nodes, cfg)
			lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
			for range 20_000 {
				d := c.jitter()
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
