package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestLongLockWithDefaults: a lock of 3h needs no flag (max-ttl is 24h by
// default), and each backend's lock horizon covers it.
//
// The LOCK reply comes once a majority said yes, each yes counted only
// once its backend's horizon covers the lock: those horizons are read at
// once. A backend that answered after them raises its own horizon after
// the reply: it is waited for.
func TestLongLockWithDefaults(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	const ttl = 3 * time.Hour
	// The validity is the ttl less the 1% drift allowance and the round.
	if _, v := lock(t, c, "nightly", ttl.Milliseconds()); v < (ttl * 98 / 100).Milliseconds() {
		t.Fatalf("validity %dms of a 3h lock", v)
	}
	covered := 0
	for _, s := range in.Backends {
		if h := horizonTTL(t, s); h >= ttl-time.Minute {
			covered++
		} else {
			t.Logf("backend %s: horizon pttl %v when the lock is granted", s.Addr(), h)
		}
	}
	if q := quorum.Quorum(len(in.Backends)); covered < q {
		t.Fatalf("%d backends' horizons cover the 3h lock when it is granted, want at least %d", covered, q)
	}
	for _, s := range in.Backends {
		pollFor(t, "backend "+s.Addr()+"'s horizon covers the 3h lock it holds", func() bool {
			return horizonTTL(t, s) >= ttl-time.Minute || s.Client().Exists(ctxT(t), "nightly").Val() == 0
		})
	}
}

// horizonTTL is the remaining ttl of the backend's lock horizon.
func horizonTTL(t *testing.T, s *redistest.Server) time.Duration {
	t.Helper()
	return s.Client().PTTL(ctxT(t), "redlockd:horizon").Val()
}

// TestHorizonCoversEveryLock: after locks taken every way a client can
// take or lengthen one (SET NX PX, LOCK over RESP3, RENEW, PEXPIRE, force
// SET, OWNER holds, KEEPALIVE, a session lock, FENCE and WAIT through a
// second proxy, a replicated script, a pipeline), no key on any backend
// outlives its horizon.
// (The ttls stay within a minute, so that only the horizon is tested.)
func TestHorizonCoversEveryLock(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	in2 := redlocktest.StartOver(t, in.Backends, redlocktest.Options{})
	c, c3, keep, c2 := in.Client(t, 2), in.Client(t, 3), soleClient(t, in), in2.Client(t, 2)
	ctx := ctxT(t)
	must := func(what string, cmd interface{ Err() error }) {
		t.Helper()
		if err := cmd.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("SET NX PX", c.Do(ctx, "SET", "a", "va", "NX", "PX", 20000))
	// The script's ttl outlives the slack the first lock left: its own
	// reply's ttl must raise the horizon.
	must("replicated script", c.Do(ctx, "EVAL", "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", 1, "e", "ve", 59000))
	for _, s := range in.Backends {
		horizonCovers(t, s.Addr(), s.Client())
	}
	tok, _ := lock(t, c3, "b", 30000)
	must("RENEW", c.Do(ctx, "RENEW", "b", tok, 50000))
	must("PEXPIRE", c.Do(ctx, "PEXPIRE", "a", 40000))
	must("force SET", c.Do(ctx, "SET", "f", "vf", "PX", 45000))
	lock(t, c, "o", 35000, "OWNER", "w1")
	lock(t, c2, "o", 55000, "OWNER", "w1")
	lock(t, keep, "k", 25000, "KEEPALIVE")
	must("session lock", keep.Do(ctx, "SET", "s", "vs", "NX"))
	must("FENCE via the second proxy", c2.Do(ctx, "LOCK", "x", 50000, "FENCE"))
	must("WAIT via the second proxy", c2.Do(ctx, "LOCK", "y", 58000, "WAIT", 100))
	p := c.Pipeline()
	for _, k := range []string{"p1", "p2", "p3", "p4", "p5"} {
		p.Do(ctx, "SET", k, "vp", "NX", "PX", 52000)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	for _, s := range in.Backends {
		horizonCovers(t, s.Addr(), s.Client())
	}
}

// horizonCovers checks that no lock key (nor an owner lock's hold count)
// on the backend lives longer than its horizon. The keys are read before
// the horizon, so a horizon read later that is still as long covered them.
func horizonCovers(t *testing.T, addr string, rc *redis.Client) {
	t.Helper()
	ctx := ctxT(t)
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	var which string
	for _, k := range keys {
		if strings.HasPrefix(k, "redlockd:") && !strings.HasPrefix(k, "redlockd:holds:") {
			continue // the horizon, fence counters, wait and round marks: not locks
		}
		p := rc.PTTL(ctx, k).Val()
		if p < 0 {
			t.Fatalf("backend %s: key %s has no expiry", addr, k)
		}
		if p > longest {
			longest, which = p, k
		}
	}
	if longest == 0 {
		t.Fatalf("backend %s holds no lock", addr)
	}
	if h := rc.PTTL(ctx, "redlockd:horizon").Val(); h < longest {
		t.Fatalf("backend %s: horizon pttl %v, but %s lives %v", addr, h, which, longest)
	}
}

// TestAutoQuarantineShown: under the auto quarantine, INFO backends says
// so, and a backend restarted after a 30s lock shows as quarantined for
// about what is left of that lock (plus the slack), far below the 24h
// max-ttl, in INFO backends and in LOCKINFO.
func TestAutoQuarantineShown(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{
		Quorum: func(c *quorum.Config) { c.RestartQuarantine = quorum.QuarantineAuto },
	})
	c := in.Client(t, 2)
	pollFor(t, "every backend watched", func() bool {
		for _, s := range in.Cluster.NodeStates() {
			if s.RunID == "" {
				return false
			}
		}
		return true
	})
	olderThanARestart(t, in)
	lock(t, c, "shown", 30000)
	old := in.Cluster.NodeStates()[0].RunID
	in.Backends[0].Restart(t)
	pollFor(t, "the restart seen and its quarantine set", func() bool {
		st := in.Cluster.NodeStates()[0]
		return st.RunID != old && st.Quarantined && !st.QuarantinePending
	})
	info := c.Info(ctxT(t), "backends").Val()
	line := ""
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "backend0:") {
			line = l
		}
	}
	if !strings.Contains(info, "restart_quarantine:auto\r\n") || !strings.Contains(line, "state=quarantined") {
		t.Fatalf("INFO backends:\n%s", info)
	}
	_, after, _ := strings.Cut(line, "quarantine_left_ms=")
	left, err := strconv.Atoi(strings.SplitN(after, ",", 2)[0])
	if err != nil || left <= 0 || left > 62000 {
		t.Fatalf("backend0 quarantine_left_ms in %q: want what is left of a 30s lock plus its slack", line)
	}
	flat, err := c.Do(ctxT(t), "LOCKINFO", "shown").Slice()
	if err != nil || !strings.Contains(fmt.Sprint(flat), "quarantined") {
		t.Fatalf("LOCKINFO = %v, %v; want backend 0's error to say quarantined", flat, err)
	}
}
