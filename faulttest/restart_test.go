package faulttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/faults"
)

// restartScenario: A takes the lock while backend 2 refuses connections,
// so A holds it on exactly a majority {0, 1}. Backend 0 then crashes and
// restarts; backend 2 comes back. B tries the same key while A still holds
// it, once B's cluster has seen the restarted server and every backend
// answers its looks. It returns the checker's verdict over A's and B's
// sections, which backends held A's key just before B's first try, and B's
// acquire error.
//
// Backend 2 refuses rather than blackholes: a blackhole drops bytes in the
// middle of open connections, and B's connection to backend 2 could be
// left waiting for replies that never come, until it is reset for being
// stale; a refusal closes it at once, and B's next call opens a clean one.
func restartScenario(t *testing.T, cfg quorum.Config, serverArgs ...string) (check.Result, []int, error) {
	t.Helper()
	e := faults.Start(t, 3, serverArgs...)
	ca, cb := e.Cluster(t, cfg), e.Cluster(t, cfg)
	const ttl = 20 * time.Second // A's validity outlasts the whole scenario
	rec := check.NewRecorder()
	// Both proxies run before the crash: each has seen every server's
	// run_id, so the restart is a change they can see. (A cluster whose
	// first look comes after it cannot tell a restart among young
	// backends; see the start-up quarantine.)
	eventually(t, 10*time.Second, "both clusters looked at every backend", func() bool {
		return lookedAtAll(ca) && lookedAtAll(cb)
	})

	e.Backends[2].Proxy.Set(faults.Refuse)
	// A needs both of 0 and 1 within the node timeout: a try that one
	// of them answers late (a loaded machine) is undone and tried again
	// with a new token, as a client would.
	var (
		t0 time.Time
		a  quorum.Lock
	)
	for try := 0; ; try++ {
		t0 = time.Now()
		var err error
		a, err = ca.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), ttl)
		if err == nil {
			break
		}
		if try == 19 || (!errors.Is(err, quorum.ErrNoQuorum) && !errors.Is(err, quorum.ErrNotAcquired)) {
			t.Fatalf("A's acquire, try %d: %v", try+1, err)
		}
		t.Logf("A's acquire, try %d: %v", try+1, err)
		time.Sleep(100 * time.Millisecond)
	}
	ha := rec.Begin("A", "k", t0, time.Now(), a.Validity)

	old := cb.NodeStates()[0].RunID
	e.Backends[0].Restart(t)
	e.Backends[2].Proxy.Set(faults.Pass)
	held := holders(t, e, "k")

	var berr error
	for range 20 { // a try lost to a transient node timeout is tried again
		// Each try starts once B's cluster has seen the new server on
		// backend 0 and its looks at every backend succeed: neither
		// backend B needs (0, restarted, and 2) is still being
		// reconnected to.
		eventually(t, 10*time.Second, "B's cluster saw the restart and every backend up", func() bool {
			return lookedAtAll(cb) && cb.NodeStates()[0].RunID != old
		})
		t0 = time.Now()
		b, err := cb.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), ttl)
		berr = err
		if err == nil {
			hb := rec.Begin("B", "k", t0, time.Now(), b.Validity)
			hb.End()
			cb.Release(context.Background(), "k", b.Token)
			break
		}
		t.Logf("B's acquire: %v", err)
		if !errors.Is(err, quorum.ErrNoQuorum) && !errors.Is(err, quorum.ErrNotAcquired) {
			t.Fatalf("B's acquire: %v", err)
		}
	}
	ha.End()
	ca.Release(context.Background(), "k", a.Token)
	return rec.Check(), held, berr
}

// holders is which backends hold key, read on the servers themselves.
func holders(t *testing.T, e *faults.Env, key string) []int {
	t.Helper()
	var out []int
	for i, b := range e.Backends {
		n, err := b.Client().Exists(ctxT(t, 5*time.Second), key).Result()
		if err != nil {
			t.Fatalf("backend %d: EXISTS %s: %v", i, key, err)
		}
		if n == 1 {
			out = append(out, i)
		}
	}
	return out
}

// TestRestartWithoutPersistenceBreaksExclusion is the negative control of
// the whole matrix: a majority member that restarts empty, with no
// persistence and no quarantine, lets a second client take a lock that is
// still held. The checker must see the overlap, or it proves nothing.
func TestRestartWithoutPersistenceBreaksExclusion(t *testing.T) {
	cfg := defaultCfg()
	cfg.RestartQuarantine = 0
	res, held, berr := restartScenario(t, cfg)
	t.Logf("SCENARIO %-28s %v (B: %v)", t.Name(), res, berr)
	if !slices.Equal(held, []int{1}) {
		t.Fatalf("A's key on backends %v before B tried, want only on 1: the lock is not lost", held)
	}
	if berr != nil {
		t.Fatalf("B was not let in (%v): the unsafe setup did not show its flaw", berr)
	}
	if len(res.Overlaps) == 0 {
		t.Fatalf("the checker missed a double grant: %v", res)
	}
}

// TestRestartWithAppendOnlyKeepsExclusion: the same crash, with
// appendfsync always: the restarted backend still holds A's key and B
// is refused.
func TestRestartWithAppendOnlyKeepsExclusion(t *testing.T) {
	cfg := defaultCfg()
	res, held, berr := restartScenario(t, cfg, "--appendonly", "yes", "--appendfsync", "always")
	t.Logf("SCENARIO %-28s %v (B: %v)", t.Name(), res, berr)
	if !slices.Equal(held, []int{0, 1}) {
		t.Fatalf("A's key on backends %v after a persistent restart, want on 0 and 1", held)
	}
	if berr == nil || !res.OK() {
		t.Fatalf("B got a held lock after a persistent restart: %v %v", res, berr)
	}
}

// TestRestartQuarantineKeepsExclusion: no persistence, but the restarted
// backend sits out every vote for the quarantine: B is refused.
func TestRestartQuarantineKeepsExclusion(t *testing.T) {
	cfg := defaultCfg()
	cfg.RestartQuarantine = time.Minute
	res, held, berr := restartScenario(t, cfg)
	t.Logf("SCENARIO %-28s %v (B: %v)", t.Name(), res, berr)
	if !slices.Equal(held, []int{1}) {
		t.Fatalf("A's key on backends %v before B tried, want only on 1: nothing for the quarantine to guard", held)
	}
	if berr == nil || !res.OK() {
		t.Fatalf("B got a held lock from a quarantined backend: %v %v", res, berr)
	}
	if !errors.Is(berr, quorum.ErrNotAcquired) && !errors.Is(berr, quorum.ErrNoQuorum) {
		t.Fatal(fmt.Sprint("unexpected error: ", berr))
	}
}

// lookedAtAll reports whether c has identified every node's server.
func lookedAtAll(c *quorum.Cluster) bool {
	for _, n := range c.NodeStates() {
		if !n.Up || n.RunID == "" {
			return false
		}
	}
	return true
}
