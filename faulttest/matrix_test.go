package faulttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faults"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

const lockTTL = 2 * time.Second

// noDeadline is the ctx of the calls whose duration a test bounds: what a
// stalled or silent node would cost them without the node timeout. Half of
// it is the bound, far above a node timeout on any machine.
const noDeadline = 10 * time.Second

// TestContentionNoFaults: two independent clusters (two proxies' worth of
// connection pools) in front of the same five backends, many clients on
// few keys. Expected: no overlap, no lost update.
func TestContentionNoFaults(t *testing.T) {
	e := faults.Start(t, 5)
	res := contend(t, load{
		clusters: []*quorum.Cluster{e.Cluster(t, defaultCfg()), e.Cluster(t, defaultCfg())},
		clients:  8, keys: 2, ttl: lockTTL, dur: runFor(),
	})
	report(t, res)
}

// TestMinorityKilled: two of five backends are SIGKILLed mid-run and come
// back empty, the case Redlock's restart rule is for. Expected: locks keep
// being granted by the other three, never twice; each cluster sees both
// restarts and quarantines them, and they take part again afterwards.
func TestMinorityKilled(t *testing.T) {
	e := faults.Start(t, 5)
	clusters := []*quorum.Cluster{e.Cluster(t, defaultCfg()), e.Cluster(t, defaultCfg())}
	killed := []int{0, 1}
	res := contend(t, load{
		clusters: clusters, clients: 6, keys: 2, ttl: lockTTL, dur: runFor(),
		during: func() {
			grantsOn(t, e.Backends, 10, "every backend before the kill")
			runIDs := make([][]string, len(clusters))
			for i, c := range clusters {
				for _, st := range c.NodeStates() {
					runIDs[i] = append(runIDs[i], st.RunID)
				}
			}
			e.Each(killed, func(b *faults.Backend) { b.Kill() })
			grantsOn(t, e.Backends[2:], 10, "the three survivors while two are dead")
			e.Each(killed, func(b *faults.Backend) { b.Restart(t) })
			for i, c := range clusters {
				eventually(t, 30*time.Second, "each restart quarantined, then over", func() bool {
					st := c.NodeStates()
					for _, k := range killed {
						if st[k].RunID == runIDs[i][k] || st[k].QuarantinedUntil.IsZero() || st[k].Quarantined || !st[k].Up {
							return false
						}
					}
					return true
				})
			}
			grantsOn(t, e.Backends, 10, "every backend after the restarts")
		},
	})
	report(t, res)
}

// grantsOn waits until each of backends has run n more SETs (the lock
// grants of the workload) than when called.
func grantsOn(t *testing.T, backends []*faults.Backend, n int, what string) {
	t.Helper()
	before := make([]int, len(backends))
	for i, b := range backends {
		before[i] = setCalls(t, b.Server)
	}
	eventually(t, 30*time.Second, fmt.Sprintf("%d grants on %s", n, what), func() bool {
		for i, b := range backends {
			if setCalls(t, b.Server) < before[i]+n {
				return false
			}
		}
		return true
	})
}

// setCalls is how many SET commands s has run since it started (scripts'
// calls included); -1 when it does not answer.
func setCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	text, err := s.Client().Info(ctxT(t, 5*time.Second), "commandstats").Result()
	if err != nil {
		return -1
	}
	_, v, ok := strings.Cut(text, "cmdstat_set:calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.SplitN(v, ",", 2)[0])
	return n
}

// TestMajorityKilled: with two of three backends dead, acquire fails fast
// with a NoQuorumError (a refused dial, not a timeout); once they are
// restarted, locks are granted again.
func TestMajorityKilled(t *testing.T) {
	e := faults.Start(t, 3)
	c := e.Cluster(t, defaultCfg())
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Kill() })
	for range 3 {
		t0 := time.Now()
		_, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
		var nq *quorum.NoQuorumError
		if !errors.As(err, &nq) || nq.Answered != 1 || nq.Total != 3 {
			t.Fatalf("acquire with a majority dead: %v, want NOQUORUM 1 of 3", err)
		}
		// Fast because refused, not timed out: the dead nodes' errors say so
		// (the fault proxy in front of each resets the connection it took).
		refused := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
		if !refused || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("NOQUORUM after %v does not say the dead backends refused the connection: %v", time.Since(t0), err)
		}
	}
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Restart(t) })
	eventually(t, 10*time.Second, "acquire after the majority restarted", func() bool {
		l, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
		if err == nil {
			_, _ = c.Release(context.Background(), "k", l.Token)
		}
		return err == nil
	})
}

// TestMajorityStalled: two of three backends SIGSTOPped. Expected:
// NOQUORUM after about one node timeout, not a hang.
func TestMajorityStalled(t *testing.T) {
	e := faults.Start(t, 3)
	c := e.Cluster(t, defaultCfg())
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Stop() })
	t.Cleanup(func() { e.Each([]int{0, 1}, func(b *faults.Backend) { b.Cont() }) })
	t0 := time.Now()
	_, err := c.Acquire(ctxT(t, noDeadline), "k", quorum.NewToken(), lockTTL)
	if !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("acquire with a majority stalled: %v, want NOQUORUM", err)
	}
	// One timeout for the SETs and one for the release after them, far
	// below what the stalled nodes would cost without a node timeout.
	if d := time.Since(t0); d > noDeadline/2 {
		t.Errorf("NOQUORUM took %v", d)
	}
}

// TestMinorityStalled: one of three backends SIGSTOPped. Acquire is granted
// by the other two; its latency is bounded by the node timeout; the
// release returns within the node timeout too.
//
// The releases that timed out on the stopped node are remembered and sent
// again once it answers: after SIGCONT the resumed node holds no released
// token (whatever of the queued SETs landed) and nothing is left pending,
// within a few retry intervals. The lock held across the resume keeps its
// copy: only released tokens are retried. (With the multiplexed backend a
// release mostly follows its SET on the same connection, so a straggler
// is rare here; TestResetMidReplyCleanup and its control show a leftover
// that only the retries remove.)
func TestMinorityStalled(t *testing.T) {
	e := faults.Start(t, 3)
	cfg := defaultCfg()
	// Long enough that the leftovers checked below cannot expire by
	// themselves within the bound given to the retries.
	const ttl = 10 * lockTTL
	c := e.Cluster(t, cfg)
	warmUp(t, c, "k", "held")
	stalled := e.Backends[0]
	stalled.Stop()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			stalled.Cont()
		}
	})
	released := map[string]bool{}
	for i := range 3 {
		t0 := time.Now()
		l, err := c.Acquire(ctxT(t, noDeadline), "k", quorum.NewToken(), ttl)
		if err != nil {
			t.Fatalf("acquire %d with a minority stalled: %v", i, err)
		}
		if d := time.Since(t0); d > noDeadline/2 {
			t.Errorf("acquire %d took %v, want about the node timeout at most", i, d)
		}
		t0 = time.Now()
		ok, err := c.Release(ctxT(t, noDeadline), "k", l.Token)
		if !ok || err != nil {
			t.Fatalf("release %d: %v %v", i, ok, err)
		}
		if d := time.Since(t0); d > noDeadline/2 {
			t.Errorf("release %d took %v", i, d)
		}
		released[l.Token] = true
	}
	if p := c.PendingReleases(); p[0] == 0 {
		t.Errorf("PendingReleases = %v, want the stopped node's timed-out releases", p)
	}
	// A healthy node that missed the node timeout on a loaded machine has
	// its release pending too, until the next retry finds it done.
	eventually(t, 5*time.Second, "no pending release on the healthy nodes", func() bool {
		p := c.PendingReleases()
		return p[1]+p[2] == 0
	})

	// A lock held across the resume: its straggling SET lands on the
	// resumed node, with the holder's token, and the retries leave it.
	l, err := c.Acquire(ctxT(t, 10*time.Second), "held", quorum.NewToken(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	stalled.Cont()
	resumed = true
	t0 := time.Now()
	rc := stalled.Client()
	eventually(t, 5*time.Second, "the queued SET lands after SIGCONT", func() bool {
		v, err := rc.Get(ctxT(t, time.Second), "held").Result()
		return err == nil && v == l.Token
	})
	// The bound is a few retry intervals, generously; the ttl is four times
	// as long, so passing here cannot be the keys' own expiry.
	eventually(t, ttl/4, "no released token left on the resumed node", func() bool {
		v, err := rc.Get(ctxT(t, time.Second), "k").Result()
		gone := errors.Is(err, redis.Nil) || (err == nil && !released[v])
		return gone && c.PendingReleases()[0] == 0
	})
	t.Logf("resumed node clean %v after SIGCONT", time.Since(t0).Round(time.Millisecond))
	if v, err := rc.Get(ctxT(t, time.Second), "held").Result(); err != nil || v != l.Token {
		t.Fatalf("held lock on the resumed node: %q %v, want its token kept", v, err)
	}
	if ok, err := c.Release(ctxT(t, 5*time.Second), "held", l.Token); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	eventually(t, 5*time.Second, "the release reaches the resumed node", func() bool {
		return rc.Exists(ctxT(t, time.Second), "held").Val() == 0
	})
}

// warmUp takes and releases each key once on every node, so that the
// connections its commands travel are open (and the release script loaded)
// before a fault: a node connects on first use, and on a loaded machine
// dialing and looking at the server can use up a whole node timeout (then
// even the healthy nodes of the first round answer too late, which is not
// what a test of a fault measures). Each node call gets a generous deadline
// of its own: warming up is not what is tested.
func warmUp(t *testing.T, c *quorum.Cluster, keys ...string) {
	t.Helper()
	for _, n := range c.Nodes() {
		for _, k := range keys {
			tok := quorum.NewToken()
			if ok, err := nodetest.SetNX(ctxT(t, 10*time.Second), n, k, tok, lockTTL); !ok || err != nil {
				t.Fatalf("warming up %s on %s: SET NX %v %v", k, n.Name(), ok, err)
			}
			if ok, err := nodetest.CompareAndDelete(ctxT(t, 10*time.Second), n, k, tok, false); !ok || err != nil {
				t.Fatalf("warming up %s on %s: release %v %v", k, n.Name(), ok, err)
			}
		}
	}
}

// TestSlowNodesBeyondTimeout: backends answering later than the node
// timeout count as "no". A slow minority costs at most one node timeout;
// a slow majority gives NOQUORUM, and the SETs that reach them late are
// deleted by the release that follows them on the same path.
func TestSlowNodesBeyondTimeout(t *testing.T) {
	e := faults.Start(t, 3)
	cfg := defaultCfg()
	c := e.Cluster(t, cfg)
	const slow = 400 * time.Millisecond
	// The first slow node is slower still, so that an acquire that waited
	// for it would take far longer than the bound.
	const slower = 4 * time.Second

	e.Backends[0].Proxy.SetDelay(slower)
	t0 := time.Now()
	l, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), lockTTL)
	if err != nil {
		t.Fatalf("acquire with one slow node: %v", err)
	}
	if d := time.Since(t0); d > slower/2 {
		t.Errorf("acquire took %v: it waited for the node %v slow", d, slower)
	}
	c.Release(ctxT(t, 10*time.Second), "k", l.Token)

	e.Backends[0].Proxy.SetDelay(slow)
	e.Backends[1].Proxy.SetDelay(slow)
	tok := quorum.NewToken()
	t0 = time.Now()
	if _, err := c.Acquire(ctxT(t, 10*time.Second), "k2", tok, lockTTL); !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("acquire with two slow nodes: %v, want NOQUORUM", err)
	}
	eventually(t, 5*time.Second, "late SETs deleted by the release behind them", func() bool {
		if time.Since(t0) < 3*slow {
			return false // both the SET and the release are still in the pipe
		}
		for _, b := range e.Backends {
			if b.Client().Exists(ctxT(t, time.Second), "k2").Val() != 0 {
				return false
			}
		}
		return true
	})
}

// TestElapsedExceedsTTL: a majority said yes, but the acquire took longer
// than the ttl (here through a clock that jumps one ttl per reading).
// Expected: not acquired, and the token deleted on every node at once,
// although the backends' own ttl is far from over.
func TestElapsedExceedsTTL(t *testing.T) {
	e := faults.Start(t, 3)
	cfg := defaultCfg()
	const ttl = 30 * time.Second
	var jumps atomic.Int64
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(jumps.Add(int64(ttl)))) }
	// A clock that jumps a ttl per reading makes the backends' start times,
	// estimated from their uptimes at looks taken readings apart, look
	// minutes apart: the start-up quarantine, not under test here, would
	// keep them out of the votes.
	cfg.RestartQuarantine = 0
	c := e.Cluster(t, cfg)
	// Connections open on first use: a first round that also dials can
	// miss the node timeout on a loaded machine (see warmUp).
	eventually(t, 10*time.Second, "k's connections open", func() bool {
		_, err := c.Get(ctxT(t, 10*time.Second), "k")
		return err == nil
	})
	_, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), ttl)
	if !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("acquire whose elapsed exceeds ttl: %v, want not acquired", err)
	}
	// A node whose SET outran the node timeout on a loaded machine gets its
	// delete retried: gone within a few retries, long before the ttl.
	for i, b := range e.Backends {
		eventually(t, 5*time.Second, fmt.Sprintf("backend %d to drop the key after the failed acquire", i), func() bool {
			return b.Client().Exists(ctxT(t, time.Second), "k").Val() == 0
		})
	}
}

// TestElapsedExceedsTTLReal: the same through real latency: every backend
// answers after more than the ttl (the node timeout is raised above it).
func TestElapsedExceedsTTLReal(t *testing.T) {
	e := faults.Start(t, 3)
	cfg := defaultCfg()
	cfg.NodeTimeout = 2 * time.Second
	c := e.Cluster(t, cfg)
	for _, b := range e.Backends {
		b.Proxy.SetDelay(150 * time.Millisecond)
	}
	if _, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), 100*time.Millisecond); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("acquire slower than its ttl: %v, want not acquired", err)
	}
}

// TestBlackhole: a blackholed minority costs one node timeout; a
// blackholed majority gives NOQUORUM; lifting the fault restores service.
//
// With one node blackholed, the first acquire needs both others within the
// node timeout, and a cluster's first acquire also pays for what is left
// of its start-up (each line dialing and loading every script): tens of
// milliseconds on a loaded machine, where a warm one takes one. The fault
// comes once the cluster has looked at every backend, and the node timeout
// leaves a healthy node's reply room under load: what is tested is the
// outcome, not the speed of a healthy node.
func TestBlackhole(t *testing.T) {
	e := faults.Start(t, 3)
	cfg := defaultCfg()
	// Not longer: after the fault is lifted, a line is reset once its
	// oldest dropped request is a node timeout past its deadline, and
	// service comes back within a few of them.
	cfg.NodeTimeout = 500 * time.Millisecond
	c := e.Cluster(t, cfg)
	eventually(t, 10*time.Second, "the cluster looked at every backend", func() bool { return lookedAtAll(c) })
	e.Backends[0].Proxy.Set(faults.Blackhole)
	l, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), lockTTL)
	if err != nil {
		t.Fatalf("acquire with one node blackholed: %v", err)
	}
	c.Release(ctxT(t, 10*time.Second), "k", l.Token)
	e.Backends[1].Proxy.Set(faults.Blackhole)
	t0 := time.Now()
	if _, err := c.Acquire(ctxT(t, noDeadline), "k", quorum.NewToken(), lockTTL); !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("acquire with two nodes blackholed: %v, want NOQUORUM", err)
	}
	if d := time.Since(t0); d > noDeadline/2 {
		t.Errorf("NOQUORUM took %v", d)
	}
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Proxy.Set(faults.Pass) })
	eventually(t, 5*time.Second, "acquire once the blackhole is lifted", func() bool {
		l, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
		if err == nil {
			c.Release(context.Background(), "k", l.Token)
		}
		return err == nil
	})
}

// TestResetMidReply: connections reset in the middle of a reply. The
// command ran on the server, but its answer is lost: a "no". With a
// majority reset, the acquire fails and its release (which also runs on
// the server before its reply is cut) leaves the key nowhere.
//
// The release on a resetting node gets a new connection, whose server look
// (INFO) is cut before the compare-and-delete is sent, so the SETs that ran
// there stay; the cluster retries those releases, and once the nodes answer
// again (the fault lifted) the leftovers are gone within a few retry
// intervals, long before their ttl.
func TestResetMidReply(t *testing.T) {
	e, c, _ := resetScenario(t, defaultCfg())
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Proxy.Set(faults.Pass) })
	t0 := time.Now()
	eventually(t, lockTTL/2, "the leftovers are released once the nodes answer", func() bool {
		for _, b := range e.Backends {
			if b.Client().Exists(ctxT(t, time.Second), "k").Val() != 0 {
				return false
			}
		}
		return slices.Equal(c.PendingReleases(), []int{0, 0, 0})
	})
	t.Logf("leftovers released %v after the fault was lifted", time.Since(t0).Round(time.Millisecond))
}

// TestResetMidReplyNoRetry is the negative control of the release retries:
// with them off, the leftovers on the nodes that reset stay after the fault
// is lifted, until their ttl.
func TestResetMidReplyNoRetry(t *testing.T) {
	cfg := defaultCfg()
	cfg.ReleaseRetry = 0
	e, _, left := resetScenario(t, cfg)
	if len(left) == 0 {
		t.Fatal("no leftover on the resetting nodes: the scenario shows nothing")
	}
	e.Each([]int{0, 1}, func(b *faults.Backend) { b.Proxy.Set(faults.Pass) })
	lifted := time.Now()
	// Five default retry intervals (the retries clean up within two),
	// well within the leftovers' ttl.
	for time.Since(lifted) < lockTTL/2 {
		for _, i := range left {
			if e.Backends[i].Client().Exists(ctxT(t, time.Second), "k").Val() == 0 {
				t.Fatalf("backend %d's leftover went away %v after the fault was lifted, with retries off", i, time.Since(lifted))
			}
		}
		time.Sleep(50 * time.Millisecond) // pacing the checks
	}
}

// resetScenario runs the reset faults and returns the backends still
// holding "k" (the leftovers, each bounded by the ttl) with the faults on.
func resetScenario(t *testing.T, cfg quorum.Config) (*faults.Env, *quorum.Cluster, []int) {
	t.Helper()
	e := faults.Start(t, 3)
	c := e.Cluster(t, cfg)
	e.Backends[0].Proxy.Set(faults.ResetReply)
	l, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), lockTTL)
	if err != nil {
		t.Fatalf("acquire with one node resetting: %v", err)
	}
	if ok, err := c.Release(ctxT(t, 10*time.Second), "k", l.Token); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	e.Backends[1].Proxy.Set(faults.ResetReply)
	if _, err := c.Acquire(ctxT(t, 10*time.Second), "k", quorum.NewToken(), lockTTL); !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("acquire with two nodes resetting: %v, want NOQUORUM", err)
	}
	if n, err := e.Backends[2].Client().Exists(ctxT(t, time.Second), "k").Result(); err != nil || n != 0 {
		t.Errorf("the healthy backend holds the key after the failed acquire (read: %v)", err)
	}
	var left []int
	for i, b := range e.Backends[:2] {
		if pttl := b.Client().PTTL(ctxT(t, time.Second), "k").Val(); pttl > lockTTL || pttl == -1 {
			t.Errorf("backend %d: leftover pttl %v, want at most the ttl", i, pttl)
		} else if pttl > 0 {
			t.Logf("backend %d keeps a key of a released or failed lock for %v (ttl-bounded)", i, pttl)
			left = append(left, i)
		}
	}
	return e, c, left
}

// TestLateReleaseAfterExpiry: a holder whose lock expired releases late,
// after another client took the lock. Expected: the late release reports
// not-held and the new holder keeps its lock.
func TestLateReleaseAfterExpiry(t *testing.T) {
	e := faults.Start(t, 3)
	c := e.Cluster(t, defaultCfg())
	a, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var b quorum.Lock
	eventually(t, 5*time.Second, "B acquires after A's lock expired", func() bool {
		b, err = c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
		return err == nil
	})
	ok, err := c.Release(ctxT(t, 5*time.Second), "k", a.Token)
	if ok || err != nil {
		t.Fatalf("late release by A: %v %v, want false", ok, err)
	}
	hd, err := c.Get(ctxT(t, 5*time.Second), "k")
	if err != nil || !hd.Held || hd.Token != b.Token {
		t.Fatalf("after A's late release: %+v %v, want B's lock intact", hd, err)
	}
}

// TestExtendAfterExpiry: extending a lock that expired fails and does not
// bring it back.
func TestExtendAfterExpiry(t *testing.T) {
	e := faults.Start(t, 3)
	c := e.Cluster(t, defaultCfg())
	a, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the lock expires on every backend", func() bool {
		for _, b := range e.Backends {
			if b.Client().Exists(ctxT(t, time.Second), "k").Val() != 0 {
				return false
			}
		}
		return true
	})
	if _, err := c.Extend(ctxT(t, 5*time.Second), "k", a.Token, lockTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("extend after expiry: %v, want not held", err)
	}
	for i, b := range e.Backends {
		if b.Client().Exists(ctxT(t, time.Second), "k").Val() != 0 {
			t.Errorf("backend %d holds the key again after a failed extend", i)
		}
	}
}

// TestExtendReachesMinority: the lock survives on one of three backends
// only (the others lost it). Extend fails and deletes nothing: the one that
// still had the token keeps it (with its old ttl), because a failed extend
// changes nothing the caller was promised.
func TestExtendReachesMinority(t *testing.T) {
	e := faults.Start(t, 3)
	c := e.Cluster(t, defaultCfg())
	a, err := c.Acquire(ctxT(t, 5*time.Second), "k", quorum.NewToken(), lockTTL)
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returns once a majority granted: a SET still on its way
	// would land after the DEL below and give the extend its majority.
	eventually(t, 5*time.Second, "every backend holds the lock", func() bool {
		for _, b := range e.Backends {
			if b.Client().Get(ctxT(t, time.Second), "k").Val() != a.Token {
				return false
			}
		}
		return true
	})
	e.Each([]int{0, 1}, func(b *faults.Backend) {
		if err := b.Client().Del(ctxT(t, 5*time.Second), "k").Err(); err != nil {
			t.Fatalf("DEL on a backend directly: %v", err)
		}
	})
	if _, err := c.Extend(ctxT(t, 5*time.Second), "k", a.Token, lockTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("extend on a minority: %v, want not held", err)
	}
	if v := e.Backends[2].Client().Get(ctxT(t, time.Second), "k").Val(); v != a.Token {
		t.Errorf("the minority backend holds %q after the failed extend, want the token it had", v)
	}
}
