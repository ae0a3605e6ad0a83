package quorum_test

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

func TestGet(t *testing.T) {
	// The ttls are minutes apart: the nodes' clocks run, so a pttl read
	// back is a little less than the ttl stored, and the q-th largest is
	// told from its neighbours by a bound (getSlack) far below a minute.
	s := time.Minute
	ms := time.Millisecond
	held := func(d time.Duration) quorum.Holder { return quorum.Holder{Held: true, Token: "A", PTTL: d} }
	a := func(d time.Duration) nodeSetup { return nodeSetup{tok: "A", ttl: d} }
	b := nodeSetup{tok: "B"}
	c := nodeSetup{tok: "C"}
	tests := []struct {
		name     string
		nodes    []nodeSetup
		step     time.Duration // clock step; elapsed of the read. Default 1ms
		want     quorum.Holder
		noQuorum bool
		answered int
		failed   []string
	}{
		{name: "3 of 3, q-th largest", nodes: []nodeSetup{a(10 * s), a(8 * s), a(9 * s)},
			want: held(9*s - ms)},
		{name: "2 of 3", nodes: []nodeSetup{a(10 * s), a(8 * s), okN},
			want: held(8*s - ms)},
		{name: "3 of 5", nodes: []nodeSetup{a(5 * s), b, a(4 * s), okN, a(3 * s)},
			want: held(3*s - ms)},
		{name: "4 of 5 takes the 3rd largest", nodes: []nodeSetup{a(5 * s), a(2 * s), a(4 * s), okN, a(3 * s)},
			want: held(3*s - ms)},
		{name: "1 of 1", nodes: []nodeSetup{a(7 * s)}, want: held(7*s - ms)},
		{name: "majority with an error", nodes: []nodeSetup{a(10 * s), errN, a(8 * s)},
			want: held(8*s - ms)},
		{name: "majority with a stalled node", nodes: []nodeSetup{a(10 * s), stallN, a(8 * s)},
			want: held(8*s - ms)},
		{name: "split A B absent", nodes: []nodeSetup{a(s), b, okN}},
		{name: "split A B C", nodes: []nodeSetup{a(s), b, c}},
		{name: "split 2-2 of 4", nodes: []nodeSetup{a(s), a(s), b, b}},
		{name: "absent everywhere", nodes: []nodeSetup{okN, okN, okN}},
		{name: "no expiry sorts largest", nodes: []nodeSetup{a(-1), a(5 * s), a(4 * s)},
			want: held(5*s - ms)},
		{name: "no expiry on a majority", nodes: []nodeSetup{a(-1), a(-1), a(4 * s)},
			want: held(-1)},
		{name: "floor of 1ms", nodes: []nodeSetup{a(s), a(s), okN}, step: 2 * s,
			want: held(ms)},
		{name: "too few answered", nodes: []nodeSetup{a(s), errN, stallN},
			noQuorum: true, answered: 1, failed: []string{"n1", "n2"}},
		{name: "nobody answered", nodes: []nodeSetup{errN, errN, errN},
			noQuorum: true, answered: 0, failed: []string{"n0", "n1", "n2"}},
		{name: "absent counts as an answer", nodes: []nodeSetup{okN, errN, okN}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, nodes := setupNodes(t, tt.nodes)
			cfg := testConfig()
			cfg.Now = newStepClock(cmp.Or(tt.step, ms)).Now
			cl := newCluster(t, nodes, cfg)
			h, err := cl.Get(context.Background(), key)
			if tt.noQuorum {
				assertNoQuorum(t, err, tt.answered, len(nodes), tt.failed...)
				return
			}
			if err != nil {
				t.Fatalf("Get = %v", err)
			}
			// No expiry (-1) and the floor (1ms) are exact; any other
			// pttl is the one stored, less the time since, by under
			// getSlack.
			const getSlack = 20 * time.Second
			w := tt.want
			exact := w.PTTL <= ms
			if h.Held != w.Held || h.Token != w.Token ||
				(exact && h.PTTL != w.PTTL) || (!exact && (h.PTTL > w.PTTL || h.PTTL <= w.PTTL-getSlack)) {
				t.Errorf("Get = %+v, want %+v (pttl less under %v if not exact)", h, w, getSlack)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []nodeSetup
		want     bool
		noQuorum bool
		answered int
	}{
		{name: "held everywhere", nodes: []nodeSetup{mineN, mineN, mineN}, want: true},
		{name: "held on a majority", nodes: []nodeSetup{mineN, okN, mineN}, want: true},
		{name: "minority", nodes: []nodeSetup{mineN, okN, okN}, want: false},
		{name: "absent", nodes: []nodeSetup{okN, okN, okN}, want: false},
		{name: "too few answered", nodes: []nodeSetup{mineN, errN, stallN}, noQuorum: true, answered: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			c := newCluster(t, nodes, testConfig())
			got, err := c.Delete(context.Background(), key)
			if tt.noQuorum {
				assertNoQuorum(t, err, tt.answered, len(fs))
			} else if err != nil {
				t.Fatalf("Delete = %v", err)
			}
			if got != tt.want {
				t.Errorf("Delete = %v, want %v", got, tt.want)
			}
			for _, f := range fs {
				if peek(t, f, key).ok {
					t.Errorf("%s: key survived Delete", f.Name())
				}
			}
		})
	}
	t.Run("unconditional, any token", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, mineN})
		c := newCluster(t, nodes, testConfig())
		if got, err := c.Delete(context.Background(), key); !got || err != nil {
			t.Errorf("Delete = %v, %v; want true, nil", got, err)
		}
		assertNowhere(t, fs, key, other)
		assertNowhere(t, fs, key, mine)
	})
	t.Run("cancelled ctx still deletes", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{mineN, mineN, mineN})
		c := newCluster(t, nodes, testConfig())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if got, err := c.Delete(ctx, key); !got || err != nil {
			t.Errorf("Delete(cancelled) = %v, %v; want true, nil", got, err)
		}
		assertNowhere(t, fs, key, mine)
	})
}

func TestExpire(t *testing.T) {
	// Minutes, far from the ttl of the keys it finds (10s), so that a ttl
	// read back from a node tells the two apart.
	const newTTL = 3 * time.Minute
	tests := []struct {
		name     string
		nodes    []nodeSetup
		want     bool
		noQuorum bool
		answered int
	}{
		{name: "held everywhere", nodes: []nodeSetup{mineN, mineN, mineN}, want: true},
		{name: "majority, any token", nodes: []nodeSetup{mineN, otherN, okN}, want: true},
		{name: "minority", nodes: []nodeSetup{okN, otherN, okN}, want: false},
		{name: "absent", nodes: []nodeSetup{okN, okN, okN}, want: false},
		{name: "too few answered", nodes: []nodeSetup{mineN, errN, errN}, noQuorum: true, answered: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			c := newCluster(t, nodes, testConfig())
			got, err := c.Expire(context.Background(), key, newTTL)
			if tt.noQuorum {
				assertNoQuorum(t, err, tt.answered, len(fs))
			} else if err != nil {
				t.Fatalf("Expire = %v", err)
			}
			if got != tt.want {
				t.Errorf("Expire = %v, want %v", got, tt.want)
			}
			for i, f := range fs {
				e := peek(t, f, key)
				if tt.nodes[i].tok == "" {
					if e.ok {
						t.Errorf("%s: Expire created the key", f.Name())
					}
					continue
				}
				if tt.nodes[i].healthy() {
					assertTTL(t, f.Name()+" (unconditional)", e.ttl, newTTL)
				}
				if e.token != tt.nodes[i].tok {
					t.Errorf("%s: Expire changed the token to %q", f.Name(), e.token)
				}
			}
		})
	}
	t.Run("invalid ttl", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{mineN, mineN, mineN})
		c := newCluster(t, nodes, testConfig())
		for _, d := range []time.Duration{0, -time.Millisecond} {
			if _, err := c.Expire(context.Background(), key, d); !errors.Is(err, quorum.ErrInvalidTTL) {
				t.Errorf("Expire(%v) = %v, want ErrInvalidTTL", d, err)
			}
		}
		if fs[0].Calls(opExpire) != 0 {
			t.Error("Expire with an invalid ttl reached a node")
		}
	})
}

func TestForceSet(t *testing.T) {
	ms := time.Millisecond
	// A minute, far from the ttl of the locks it takes over (10s), so
	// that a ttl read back from a node tells the two apart. Its validity
	// is less the clock's step (10ms) and the drift (1% of it, plus 2ms).
	const setTTL = time.Minute
	const valid = setTTL - 10*time.Millisecond - 602*time.Millisecond
	tests := []struct {
		name     string
		nodes    []nodeSetup
		want     time.Duration
		noQuorum bool
		answered int
	}{
		{name: "takes over everywhere", nodes: []nodeSetup{otherN, otherN, okN}, want: valid},
		{name: "majority stored", nodes: []nodeSetup{otherN, errN, okN}, want: valid},
		{name: "too few stored", nodes: []nodeSetup{otherN, errN, stallN}, noQuorum: true, answered: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			cfg := testConfig()
			cfg.Now = newStepClock(10 * ms).Now
			c := newCluster(t, nodes, cfg)
			l, err := c.ForceSet(context.Background(), key, mine, setTTL)
			if tt.noQuorum {
				assertNoQuorum(t, err, tt.answered, len(fs))
				return
			}
			if err != nil || l != (quorum.Lock{Key: key, Token: mine, Validity: tt.want}) {
				t.Fatalf("ForceSet = %+v, %v; want validity %v", l, err, tt.want)
			}
			for i, f := range fs {
				if !tt.nodes[i].healthy() {
					continue
				}
				if e := peek(t, f, key); !e.ok || e.token != mine {
					t.Errorf("%s: stores %+v, want %s", f.Name(), e, mine)
				} else {
					assertTTL(t, f.Name(), e.ttl, setTTL)
				}
			}
		})
	}
	t.Run("invalid ttl", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
		c := newCluster(t, nodes, testConfig())
		if _, err := c.ForceSet(context.Background(), key, mine, 0); !errors.Is(err, quorum.ErrInvalidTTL) {
			t.Errorf("ForceSet(0) = %v, want ErrInvalidTTL", err)
		}
		if h := holders(t, fs, key, other); len(h) != 3 {
			t.Errorf("invalid ForceSet touched the nodes: other on %v", h)
		}
	})
	t.Run("validity ran out", func(t *testing.T) {
		_, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
		cfg := testConfig()
		cfg.Now = newStepClock(time.Second).Now
		c := newCluster(t, nodes, cfg)
		if _, err := c.ForceSet(context.Background(), key, mine, time.Second); !errors.Is(err, quorum.ErrNotAcquired) {
			t.Errorf("ForceSet = %v, want ErrNotAcquired", err)
		}
	})
}

// TestForceSetFailureReleases: like a failed Acquire (step 5 of the algorithm) and a
// failed Extend, a failed forced takeover must not leave the caller's token
// stored: the caller was told it does not hold the lock, yet a majority
// (validity ran out) or a minority (too few answered) would keep the token
// for the whole ttl, and Get would name it as the holder.
func TestForceSetFailureReleases(t *testing.T) {
	t.Run("validity ran out", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
		cfg := testConfig()
		cfg.Now = newStepClock(time.Second).Now
		c := newCluster(t, nodes, cfg)
		if _, err := c.ForceSet(context.Background(), key, mine, time.Second); !errors.Is(err, quorum.ErrNotAcquired) {
			t.Fatalf("ForceSet = %v, want ErrNotAcquired", err)
		}
		assertNowhere(t, fs, key, mine)
	})
	t.Run("too few stored", func(t *testing.T) {
		fs, nodes := setupNodes(t, []nodeSetup{otherN, errN, errN})
		c := newCluster(t, nodes, testConfig())
		if _, err := c.ForceSet(context.Background(), key, mine, time.Second); !errors.Is(err, quorum.ErrNoQuorum) {
			t.Fatalf("ForceSet = %v, want ErrNoQuorum", err)
		}
		assertNowhere(t, fs, key, mine)
	})
}
