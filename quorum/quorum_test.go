package quorum

import (
	"errors"
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

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.NodeTimeout != 50*time.Millisecond || c.DriftFactor != 0.01 ||
		c.RetryDelayMin != 5*time.Millisecond || c.RetryDelayMax != 50*time.Millisecond || c.Now == nil {
		t.Errorf("DefaultConfig() = %+v, not the documented defaults", c)
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
