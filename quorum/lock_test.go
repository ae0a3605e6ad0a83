package quorum_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

const (
	key   = "lock:k"
	mine  = "token-mine"
	other = "token-other"
	ttl   = 10 * time.Second
)

// nodeSetup prepares one node: what it stores at key and how it fails.
type nodeSetup struct {
	tok   string        // stored at key before the call; "" = absent
	ttl   time.Duration // ttl of tok; 0 = the package's ttl
	fault error         // the node's fault (faultnode.SetFault)
	stall bool          // the node answers no call in time
}

var (
	okN    = nodeSetup{}
	mineN  = nodeSetup{tok: mine}
	otherN = nodeSetup{tok: other}
	errN   = nodeSetup{fault: errBoom}
	stallN = nodeSetup{stall: true}
	noN    = nodeSetup{fault: faultnode.ErrAnswerNo}
	lostN  = nodeSetup{fault: faultnode.ReplyLost(errLost)}
)

// healthy reports whether the node answers, and carries out, every call.
func (s nodeSetup) healthy() bool { return s.fault == nil && !s.stall }

func setupNodes(t *testing.T, setups []nodeSetup) ([]*faultnode.Node, []quorum.Node) {
	t.Helper()
	fs, nodes := newNodes(len(setups))
	for i, s := range setups {
		if s.tok != "" {
			put(t, fs[i], key, s.tok, cmp.Or(s.ttl, ttl))
		}
		fs[i].SetFault(s.fault)
		if s.stall {
			fs[i].SetDelay(stall)
		}
	}
	return fs, nodes
}

// TestAcquireVotes runs Acquire with k of N nodes granting, for N = 1..7 and
// k = 0..N, the other N-k refusing in three ways.
func TestAcquireVotes(t *testing.T) {
	modes := []struct {
		name   string
		refuse nodeSetup
		// answered reports whether a refusing node counts as having answered.
		answered bool
	}{
		{"errors", errN, false},
		{"no", noN, true},
		{"held", otherN, true},
	}
	for n := 1; n <= 7; n++ {
		for k := 0; k <= n; k++ {
			for _, m := range modes {
				t.Run(fmt.Sprintf("N%d/k%d/%s", n, k, m.name), func(t *testing.T) {
					setups := make([]nodeSetup, n)
					for i := k; i < n; i++ {
						setups[i] = m.refuse
					}
					fs, nodes := setupNodes(t, setups)
					c := newCluster(t, nodes, testConfig())
					l, err := c.Acquire(context.Background(), key, mine, ttl)
					q := quorum.Quorum(n)
					switch {
					case k >= q:
						if err != nil {
							t.Fatalf("Acquire = %v, want success", err)
						}
						if l.Key != key || l.Token != mine || l.Validity <= 0 || l.Validity > ttl {
							t.Errorf("Acquire = %+v", l)
						}
						waitAll(t, fs, opSetNX, 1)
						if got, want := holders(t, fs, key, mine), names(fs[:k]); !slices.Equal(got, want) {
							t.Errorf("holders = %v, want %v", got, want)
						}
						for _, f := range fs {
							if f.Calls(opCAD) != 0 {
								t.Errorf("%s: released after a successful acquire", f.Name())
							}
						}
						return
					case m.answered:
						if !errors.Is(err, quorum.ErrNotAcquired) || errors.Is(err, quorum.ErrNoQuorum) {
							t.Fatalf("Acquire = %v, want ErrNotAcquired", err)
						}
					default:
						assertNoQuorum(t, err, k, n, names(fs[k:])...)
						if !errors.Is(err, errBoom) {
							t.Errorf("errors.Is(err, node error) = false for %v", err)
						}
					}
					if l != (quorum.Lock{}) {
						t.Errorf("failed Acquire returned %+v", l)
					}
					assertNowhere(t, fs, key, mine)
					for i, f := range fs {
						// A node that answered nil never stored this SET: it is left alone.
						want := 1
						if i >= k && m.answered {
							want = 0
						}
						if f.Calls(opCAD) != want {
							t.Errorf("%s: %d releases after a failed acquire, want %d", f.Name(), f.Calls(opCAD), want)
						}
					}
					if m.name == "held" {
						if got := holders(t, fs, key, other); len(got) != n-k {
							t.Errorf("other token now on %v, want on all %d refusing nodes", got, n-k)
						}
					}
				})
			}
		}
	}
}

func TestAcquireMixedAnswers(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []nodeSetup
		wantOK   bool
		wantNoQ  bool
		answered int
		failed   []string
	}{
		{name: "2 yes 1 no 2 errors of 5 is contention", nodes: []nodeSetup{okN, okN, otherN, errN, errN}},
		{name: "2 yes 3 errors of 5 is no quorum", nodes: []nodeSetup{okN, okN, errN, errN, stallN},
			wantNoQ: true, answered: 2, failed: []string{"n2", "n3", "n4"}},
		{name: "split vote 2-2 of 4", nodes: []nodeSetup{okN, okN, otherN, otherN}},
		{name: "lost reply is released too", nodes: []nodeSetup{okN, lostN, otherN}},
		{name: "lost replies on a majority", nodes: []nodeSetup{lostN, lostN, lostN, okN, okN},
			wantNoQ: true, answered: 2, failed: []string{"n0", "n1", "n2"}},
		{name: "stalled minority", nodes: []nodeSetup{okN, okN, stallN}, wantOK: true},
		{name: "errors on a minority of 5", nodes: []nodeSetup{errN, okN, lostN, okN, okN}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			c := newCluster(t, nodes, testConfig())
			_, err := c.Acquire(context.Background(), key, mine, ttl)
			switch {
			case tt.wantOK:
				if err != nil {
					t.Fatalf("Acquire = %v, want success", err)
				}
				return
			case tt.wantNoQ:
				assertNoQuorum(t, err, tt.answered, len(tt.nodes), tt.failed...)
			default:
				if !errors.Is(err, quorum.ErrNotAcquired) {
					t.Fatalf("Acquire = %v, want ErrNotAcquired", err)
				}
			}
			// A lost-reply node stored the token but its CompareAndDelete
			// fails the same way after deleting: either way it is gone.
			assertNowhere(t, fs, key, mine)
		})
	}
}

func TestAcquireInvalidTTL(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := c.Acquire(context.Background(), key, mine, d); !errors.Is(err, quorum.ErrInvalidTTL) {
			t.Errorf("Acquire(ttl %v) = %v, want ErrInvalidTTL", d, err)
		}
	}
	for _, f := range fs {
		if n := f.Calls(opSetNX); n != 0 {
			t.Errorf("%s: %d SetNX calls for an invalid ttl", f.Name(), n)
		}
	}
}

// TestAcquireValidityClock drives Acquire's validity with a clock that
// advances by step per reading: Acquire reads it before and after the fan-out.
func TestAcquireValidityClock(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		step  time.Duration
		drift float64
		want  time.Duration // 0: not acquired
	}{
		{"fast", 100 * ms, 0.01, 888 * ms},
		{"just in time", 987 * ms, 0.01, ms},
		{"validity exactly zero", 988 * ms, 0.01, 0},
		{"slower than ttl", 5 * time.Second, 0.01, 0},
		{"no drift factor", 100 * ms, 0, 898 * ms},
		{"no drift factor, zero validity", 998 * ms, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := newNodes(3)
			cfg := testConfig()
			cfg.DriftFactor = tt.drift
			cfg.Now = newStepClock(tt.step).Now
			c := newCluster(t, nodes, cfg)
			l, err := c.Acquire(context.Background(), key, mine, time.Second)
			if tt.want > 0 {
				if err != nil || l.Validity != tt.want {
					t.Fatalf("Acquire = %+v, %v; want validity %v", l, err, tt.want)
				}
				return
			}
			if !errors.Is(err, quorum.ErrNotAcquired) {
				t.Fatalf("Acquire = %+v, %v; want ErrNotAcquired", l, err)
			}
			// Every node granted, yet the lock is worthless: it must be
			// released on every one of them.
			assertNowhere(t, fs, key, mine)
			for _, f := range fs {
				if f.Calls(opSetNX) != 1 || f.Calls(opCAD) != 1 {
					t.Errorf("%s: SetNX %d, CompareAndDelete %d; want 1 and 1",
						f.Name(), f.Calls(opSetNX), f.Calls(opCAD))
				}
			}
		})
	}
}

// TestAcquireReleaseSurvivesCancel cancels the caller's ctx once every node
// has answered the SetNX round, before Acquire's release: the release must
// still reach every node.
func TestAcquireReleaseSurvivesCancel(t *testing.T) {
	fs, nodes := setupNodes(t, []nodeSetup{okN, okN, otherN, otherN, otherN})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var answered atomic.Int32
	for _, f := range fs {
		f.OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
			if cmd.Kind == quorum.SetNX && answered.Add(1) == int32(len(fs)) {
				cancel()
			}
		})
	}
	c := newCluster(t, nodes, testConfig())
	_, err := c.Acquire(ctx, key, mine, ttl)
	if !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("Acquire = %v, want ErrNotAcquired", err)
	}
	if ctx.Err() == nil {
		t.Fatal("test bug: ctx was not cancelled during Acquire")
	}
	assertNowhere(t, fs, key, mine)
	for i, f := range fs {
		want := 1
		if i >= 2 { // answered nil: never stored this SET
			want = 0
		}
		if f.Calls(opCAD) != want {
			t.Errorf("%s: %d releases, want %d", f.Name(), f.Calls(opCAD), want)
		}
	}
	if got := holders(t, fs, key, other); len(got) != 3 {
		t.Errorf("other token on %v, want untouched on 3 nodes", got)
	}
}

// TestAcquireCancelledCtx: a ctx cancelled before the call starts no round.
func TestAcquireCancelledCtx(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Acquire(ctx, key, mine, ttl)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled ctx = %v, want context.Canceled", err)
	}
	for _, f := range fs {
		if n := f.Calls(opSetNX) + f.Calls(opCAD); n != 0 {
			t.Errorf("%s: %d calls, want none", f.Name(), n)
		}
	}
}

// TestAcquireRoundOutlivesCancel: a client that hangs up during a round
// does not leave it half done: every node still gets its SET.
func TestAcquireRoundOutlivesCancel(t *testing.T) {
	fs, nodes := newNodes(3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCluster(t, nodes, testConfig())
	// Cancel as soon as the first node answers; the others' calls carry on.
	var once sync.Once
	for _, f := range fs[:1] {
		f.OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
			if cmd.Kind == quorum.SetNX {
				once.Do(cancel)
			}
		})
	}
	if _, err := c.Acquire(ctx, key, mine, ttl); err != nil {
		t.Fatalf("Acquire = %v, want success", err)
	}
	waitAll(t, fs, opSetNX, 1)
	if got := holders(t, fs, key, mine); len(got) != 3 {
		t.Fatalf("token on %v, want all 3 nodes", got)
	}
}

// TestAcquireStalledNodes: a node that never answers costs about one
// NodeTimeout. A stalled node here answers only when its call's deadline
// passes, and the caller's ctx allows 10s: without a per-node deadline a
// stalled node would cost all of that, so a bound of half of it catches a
// missing node timeout with a margin no scheduler can eat.
func TestAcquireStalledNodes(t *testing.T) {
	const nodeTimeout = 20 * time.Millisecond
	const slow = 10 * time.Second
	const bound = slow / 2
	tests := []struct {
		name   string
		nodes  []nodeSetup
		wantOK bool
		failed []string
	}{
		{"one of 3 stalled", []nodeSetup{okN, stallN, okN}, true, nil},
		{"two of 5 stalled", []nodeSetup{stallN, okN, stallN, okN, okN}, true, nil},
		{"two of 3 stalled", []nodeSetup{stallN, okN, stallN}, false, []string{"n0", "n2"}},
		{"all stalled", []nodeSetup{stallN, stallN, stallN}, false, []string{"n0", "n1", "n2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			cfg := testConfig()
			cfg.NodeTimeout = nodeTimeout
			c := newCluster(t, nodes, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), slow)
			defer cancel()
			start := time.Now()
			_, err := c.Acquire(ctx, key, mine, ttl)
			took := time.Since(start)
			if took > bound {
				t.Errorf("Acquire took %v with NodeTimeout %v", took, nodeTimeout)
			}
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Acquire = %v, want success", err)
				}
				if got := holders(t, fs, key, mine); len(got) < quorum.Quorum(len(fs)) {
					t.Errorf("holders = %v, want a majority", got)
				}
				return
			}
			answered := len(tt.nodes) - len(tt.failed)
			assertNoQuorum(t, err, answered, len(tt.nodes), tt.failed...)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(err, DeadlineExceeded) = false: %v", err)
			}
			assertNowhere(t, fs, key, mine)
		})
	}
}

func TestAcquireSlowNodes(t *testing.T) {
	t.Run("slow but within the node timeout counts", func(t *testing.T) {
		fs, nodes := newNodes(3)
		for _, f := range fs[1:] {
			f.SetDelay(2 * time.Millisecond)
		}
		fs[0].SetFault(errBoom)
		cfg := testConfig()
		cfg.NodeTimeout = time.Second // generous: the delay must never reach it
		c := newCluster(t, nodes, cfg)
		if _, err := c.Acquire(context.Background(), key, mine, ttl); err != nil {
			t.Fatalf("Acquire = %v, want success from the two slow nodes", err)
		}
	})
	t.Run("slower than the node timeout fails", func(t *testing.T) {
		fs, nodes := newNodes(3)
		for _, f := range fs[1:] {
			f.SetDelay(time.Hour)
		}
		c := newCluster(t, nodes, testConfig())
		_, err := c.Acquire(context.Background(), key, mine, ttl)
		assertNoQuorum(t, err, 1, 3, "n1", "n2")
		assertNowhere(t, fs, key, mine)
	})
}

// TestAcquireMutualExclusion: concurrent acquirers with distinct tokens; at
// most one of them may win each round.
func TestAcquireMutualExclusion(t *testing.T) {
	fs, nodes := newNodes(5)
	for i, f := range fs {
		f.SetDelay(time.Duration(i) * 100 * time.Microsecond)
	}
	cfg := testConfig()
	cfg.NodeTimeout = time.Second
	c := newCluster(t, nodes, cfg)
	for round := range 10 {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Acquire(context.Background(), key, fmt.Sprintf("r%d-g%d", round, g), ttl); err == nil {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if w := wins.Load(); w > 1 {
			t.Fatalf("round %d: %d acquirers hold the lock at once", round, w)
		}
		if _, err := c.Delete(context.Background(), key); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		waitAll(t, fs, opDelete, round+1)
	}
}

func TestExtend(t *testing.T) {
	ms := time.Millisecond
	step := 10 * ms
	// A minute, far from the ttl of the locks it finds (10s), so that a
	// ttl read back from a node tells the two apart.
	const newTTL = time.Minute
	// Its validity: newTTL less the clock's step and the drift, 1% of
	// newTTL plus 2ms.
	const drift = 602 * time.Millisecond
	tests := []struct {
		name     string
		nodes    []nodeSetup
		step     time.Duration
		want     time.Duration // validity on success
		wantErr  error         // ErrNotHeld or ErrNoQuorum
		answered int
	}{
		{name: "held everywhere", nodes: []nodeSetup{mineN, mineN, mineN}, want: newTTL - step - drift},
		{name: "held on a majority", nodes: []nodeSetup{mineN, mineN, otherN}, want: newTTL - step - drift},
		{name: "majority with an error", nodes: []nodeSetup{mineN, errN, mineN}, want: newTTL - step - drift},
		{name: "minority", nodes: []nodeSetup{mineN, otherN, okN}, wantErr: quorum.ErrNotHeld},
		{name: "held nowhere", nodes: []nodeSetup{okN, okN, okN}, wantErr: quorum.ErrNotHeld},
		{name: "too few answered", nodes: []nodeSetup{mineN, errN, stallN}, wantErr: quorum.ErrNoQuorum, answered: 1},
		{name: "validity ran out", nodes: []nodeSetup{mineN, mineN, mineN}, step: newTTL - drift, wantErr: quorum.ErrNotHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			cfg := testConfig()
			cfg.Now = newStepClock(cmp.Or(tt.step, step)).Now
			c := newCluster(t, nodes, cfg)
			v, err := c.Extend(context.Background(), key, mine, newTTL)
			if tt.wantErr == nil {
				if err != nil || v != tt.want {
					t.Fatalf("Extend = %v, %v; want %v", v, err, tt.want)
				}
				for i, f := range fs {
					e := peek(t, f, key)
					if tt.nodes[i] == mineN {
						assertTTL(t, f.Name()+", extended", e.ttl, newTTL)
					}
					if tt.nodes[i] == otherN {
						if e.token != other {
							t.Errorf("%s: other's lock touched: %+v", f.Name(), e)
						}
						assertTTL(t, f.Name()+", other's lock", e.ttl, ttl)
					}
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || v != 0 {
				t.Fatalf("Extend = %v, %v; want %v", v, err, tt.wantErr)
			}
			if tt.wantErr == quorum.ErrNoQuorum {
				assertNoQuorum(t, err, tt.answered, len(fs))
			}
			// A failed extend deletes nothing: every node that held the
			// token still does, so the validity reported before holds.
			var want []string
			for i, f := range fs {
				if tt.nodes[i] == mineN {
					want = append(want, f.Name())
				}
			}
			if got := holders(t, fs, key, mine); !slices.Equal(got, want) {
				t.Errorf("after a failed extend the token is on %v, want %v (where it was)", got, want)
			}
			for i, f := range fs {
				if tt.nodes[i] == otherN {
					if e := peek(t, f, key); e.token != other {
						t.Errorf("%s: other's lock removed", f.Name())
					}
				}
			}
		})
	}
	t.Run("invalid ttl", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{mineN, mineN, mineN})
		c := newCluster(t, nodes, testConfig())
		if _, err := c.Extend(context.Background(), key, mine, 0); !errors.Is(err, quorum.ErrInvalidTTL) {
			t.Errorf("Extend(0) = %v, want ErrInvalidTTL", err)
		}
		if h := holders(t, fs, key, mine); len(h) != 3 {
			t.Errorf("invalid Extend changed the lock: holders %v", h)
		}
	})
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []nodeSetup
		want     bool
		noQuorum bool
		answered int
		failed   []string
	}{
		{name: "held everywhere", nodes: []nodeSetup{mineN, mineN, mineN}, want: true},
		{name: "held on a majority", nodes: []nodeSetup{mineN, otherN, mineN}, want: true},
		{name: "majority incl. a lost reply", nodes: []nodeSetup{mineN, mineN, {tok: mine, fault: faultnode.ReplyLost(errLost)}}, want: true},
		{name: "minority", nodes: []nodeSetup{mineN, otherN, okN}, want: false},
		{name: "held nowhere", nodes: []nodeSetup{okN, okN, okN}, want: false},
		{name: "held by another token", nodes: []nodeSetup{otherN, otherN, otherN}, want: false},
		{name: "too few answered", nodes: []nodeSetup{mineN, errN, stallN}, noQuorum: true, answered: 1, failed: []string{"n1", "n2"}},
		{name: "one of five answered", nodes: []nodeSetup{mineN, errN, errN, errN, mineN},
			noQuorum: true, answered: 2, failed: []string{"n1", "n2", "n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			c := newCluster(t, nodes, testConfig())
			got, err := c.Release(context.Background(), key, mine)
			if tt.noQuorum {
				assertNoQuorum(t, err, tt.answered, len(fs), tt.failed...)
			} else if err != nil {
				t.Fatalf("Release = %v", err)
			}
			if got != tt.want {
				t.Errorf("Release = %v, want %v", got, tt.want)
			}
			assertNowhere(t, fs, key, mine)
			for i, f := range fs {
				if tt.nodes[i] == otherN {
					if s := peek(t, f, key); !s.ok || s.token != other {
						t.Errorf("%s: Release deleted another token's key", f.Name())
					}
				}
			}
		})
	}
	t.Run("cancelled ctx still releases", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{mineN, mineN, mineN})
		c := newCluster(t, nodes, testConfig())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if got, err := c.Release(ctx, key, mine); !got || err != nil {
			t.Errorf("Release(cancelled) = %v, %v; want true, nil", got, err)
		}
		assertNowhere(t, fs, key, mine)
	})
}

func TestAcquireThenReleaseRoundTrip(t *testing.T) {
	fs, nodes := newNodes(5)
	c := newCluster(t, nodes, testConfig())
	tok := quorum.NewToken()
	l, err := c.Acquire(context.Background(), key, tok, ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := c.Acquire(context.Background(), key, quorum.NewToken(), ttl); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("second Acquire = %v, want ErrNotAcquired", err)
	}
	waitAll(t, fs, opSetNX, 2)
	h, err := c.Get(context.Background(), key)
	if err != nil || !h.Held || h.Token != l.Token {
		t.Fatalf("Get = %+v, %v; want held by %s", h, err, l.Token)
	}
	if ok, err := c.Release(context.Background(), key, tok); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if ok, err := c.Release(context.Background(), key, tok); ok || err != nil {
		t.Fatalf("second Release = %v, %v; want false, nil", ok, err)
	}
	if _, err := c.Acquire(context.Background(), key, quorum.NewToken(), ttl); err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
}

// TestAcquireExpiredValidityReleasesStragglers: Acquire stops reading
// answers once a majority granted. When the validity then turns out to be
// spent, the release must not overtake a node whose SetNX is still on its
// way, or that node keeps the token for the whole ttl after the caller was
// told it did not get the lock.
func TestAcquireExpiredValidityReleasesStragglers(t *testing.T) {
	fs, nodes := newNodes(3)
	fs[2].SetOpDelay(opSetNX, 30*time.Millisecond) // grants, but late
	cfg := testConfig()
	cfg.NodeTimeout = time.Second                      // the late answer is well within it
	cfg.Now = newStepClock(988 * time.Millisecond).Now // validity = 1s - 988ms - 12ms = 0
	c := newCluster(t, nodes, cfg)
	if _, err := c.Acquire(context.Background(), key, mine, time.Second); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("Acquire = %v, want ErrNotAcquired", err)
	}
	fs[2].WaitAnswered(t, opSetNX, 1)
	assertNowhere(t, fs, key, mine)
}

// TestFailedAcquireKeepsOwnEarlierLock: a client that repeats SET NX with the
// token it already holds gets "not acquired", as from Redis, and its lock
// stays: the nodes that refused hold that earlier acquisition.
func TestFailedAcquireKeepsOwnEarlierLock(t *testing.T) {
	fs, nodes := setupNodes(t, []nodeSetup{okN, okN, okN})
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), key, mine, ttl); err != nil {
		t.Fatalf("first Acquire = %v", err)
	}
	waitAll(t, fs, opSetNX, 1)
	if _, err := c.Acquire(context.Background(), key, mine, ttl); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("repeated Acquire = %v, want ErrNotAcquired", err)
	}
	if got := holders(t, fs, key, mine); len(got) != 3 {
		t.Fatalf("after a repeated acquire the token is on %v, want all 3 nodes", got)
	}
}
