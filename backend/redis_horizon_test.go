package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// These tests run the quorum's own defaults (max-ttl 24h, the auto restart
// quarantine) over real redis-servers, restarting one by killing it and
// starting it again on the same port, empty.

// horizonKey is the reserved key of the lock horizon on every backend.
const horizonKey = "redlockd:horizon"

// allSeen waits until the cluster has looked at every backend, and until
// every backend's server has been up for witnessAge, and returns their
// run_ids.
//
// A restart's auto quarantine counts another node as a witness only if
// that node's server started before the restart: its first look came no
// later than the proxy's last look at the run that restarted, or its
// uptime (whole seconds) dates its start more than 2 s earlier. A restart
// made within one health interval of the proxy's first looks and within
// 2 s of the servers' start meets neither, so the quarantine rightly stays
// at its cap; the tests restart servers older than that.
func allSeen(t *testing.T, cl *quorum.Cluster) []string {
	t.Helper()
	ids := make([]string, len(cl.Nodes()))
	for i := range ids {
		ids[i] = nodeSeen(t, cl, i, "").RunID
	}
	for _, st := range cl.NodeStates() {
		addr, _, _ := strings.Cut(st.Name, "/") // host:port, then the URL's db
		c := redis.NewClient(&redis.Options{Addr: addr})
		poll(t, "backend "+st.Name+" up for "+witnessAge.String(), func() bool {
			return uptimeOf(t, c) >= witnessAge
		})
		_ = c.Close()
	}
	return ids
}

// witnessAge is the uptime past which a server counts as started before
// any restart that comes later: the 2 s of the quarantine's tolerance and
// the second that uptime_in_seconds rounds down.
const witnessAge = 3 * time.Second

// settledAfterRestart waits until the cluster has seen backend i's
// restart (a run_id other than old) and its quarantine is no longer the
// 24h cap it starts from, and returns the backend's state.
func settledAfterRestart(t *testing.T, cl *quorum.Cluster, i int, old string) quorum.NodeState {
	t.Helper()
	var st quorum.NodeState
	deadline := time.Now().Add(pollBound)
	for {
		st = cl.NodeStates()[i]
		if st.Up && st.RunID != old && st.QuarantinedUntil.Before(time.Now().Add(23*time.Hour)) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for backend %d's restart seen and its quarantine set; its state: %+v; all: %+v", i, st, cl.NodeStates())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedisAutoQuarantineShortLocks: with the defaults, a restart while
// only 2s locks were ever granted quarantines the backend for about those
// 2s plus the horizon's slack, at least until the live lock expires and
// far below the 24h max-ttl; then the backend votes again.
func TestRedisAutoQuarantineShortLocks(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cl := proxyOver(t, servers, nil)
	ids := allSeen(t, cl)
	ctx := t.Context()
	for i := range 20 {
		key := fmt.Sprintf("short-%d", i)
		if _, err := cl.Acquire(ctx, key, "tok", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Release(ctx, key, "tok"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Acquire(ctx, "live", "tok", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	liveEnd := time.Now().Add(2 * time.Second) // the live lock expires before this
	servers[0].Restart(t)
	st := settledAfterRestart(t, cl, 0, ids[0])
	seen := time.Now()
	if st.QuarantinedUntil.Before(liveEnd) {
		t.Fatalf("quarantined until %v: ends before the live lock can expire (%v)",
			st.QuarantinedUntil.Format(time.StampMilli), liveEnd.Format(time.StampMilli))
	}
	// 2s locks raise the horizon to 4s at most (twice the ttl).
	if limit := seen.Add(5 * time.Second); st.QuarantinedUntil.After(limit) {
		t.Fatalf("quarantined until %v, want at most 2s locks plus their slack (before %v)",
			st.QuarantinedUntil.Format(time.StampMilli), limit.Format(time.StampMilli))
	}
	servers[1].Kill() // a lock now needs A's vote
	var err error
	poll(t, "A voting again", func() bool {
		_, err = cl.Acquire(ctx, "after", "tok", time.Second)
		return err == nil
	})
}

// refuseFirst is backend i that refuses (errors) every SET NX of token
// "first": a lock granted on the other backends only.
func refuseFirst(t *testing.T, s *redistest.Server) quorum.Node {
	return &nodetest.Hooked{Node: newTestRedis(t, s.Addr()), Before: func(_ context.Context, cmd quorum.Cmd) error {
		if cmd.Kind == quorum.SetNX && cmd.Token == "first" {
			return errors.New("refused by the test")
		}
		return nil
	}}
}

// TestRedisAutoQuarantineCoversLongLock: a 1h lock is granted on A and B
// (C refuses it); A restarts empty. A's quarantine covers what is left of
// the lock, so A cannot help C grant the key to a second client. A proxy
// with the quarantine off is the negative control: A and C hand it out.
func TestRedisAutoQuarantineCoversLongLock(t *testing.T) {
	servers := redistest.StartN(t, 3)
	nodes := []quorum.Node{newTestRedis(t, servers[0].Addr()), newTestRedis(t, servers[1].Addr()), refuseFirst(t, servers[2])}
	cl := clusterOf(t, nodes, nil)
	ids := allSeen(t, cl)
	if _, err := cl.Acquire(t.Context(), "long", "first", time.Hour); err != nil {
		t.Fatal(err)
	}
	lockEnd := time.Now().Add(time.Hour)
	servers[0].Restart(t)
	st := settledAfterRestart(t, cl, 0, ids[0])
	if st.QuarantinedUntil.Before(lockEnd) {
		t.Fatalf("quarantined until %v, before the 1h lock can expire (%v)",
			st.QuarantinedUntil.Format(time.StampMilli), lockEnd.Format(time.StampMilli))
	}
	if _, err := cl.Acquire(t.Context(), "long", "second", time.Minute); err == nil {
		t.Fatal("a second client got the lock the first holds for an hour")
	}
	ctl := clusterOf(t, []quorum.Node{newTestRedis(t, servers[0].Addr()), newTestRedis(t, servers[1].Addr()),
		newTestRedis(t, servers[2].Addr())}, withQuarantine(0))
	allSeen(t, ctl)
	if _, err := ctl.Acquire(t.Context(), "long", "second", time.Minute); err != nil {
		t.Fatalf("negative control, quarantine off: %v, want the lock (A's vote counts)", err)
	}
}

// TestRedisHorizonRaisedRarely: 100 similar locks raise each backend's
// horizon once or twice, not per lock, and the horizon on the server
// covers them.
func TestRedisHorizonRaisedRarely(t *testing.T) {
	servers := redistest.StartN(t, 3)
	raises := make([]atomic.Int64, len(servers))
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		nodes[i] = &nodetest.Hooked{Node: newTestRedis(t, s.Addr()), After: func(cmd quorum.Cmd, rep *quorum.Reply) {
			if cmd.Kind == quorum.RaiseHorizon && rep.Err == nil {
				raises[i].Add(1)
			}
		}}
	}
	cl := clusterOf(t, nodes, nil)
	allSeen(t, cl)
	for i := range 100 {
		key := fmt.Sprintf("k%d", i)
		if _, err := cl.Acquire(t.Context(), key, "tok", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Release(t.Context(), key, "tok"); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range servers {
		if n := raises[i].Load(); n < 1 || n > 3 {
			t.Errorf("backend %d: %d horizon raises for 100 similar locks, want 1 to 3", i, n)
		}
		if p := s.Client().PTTL(t.Context(), horizonKey).Val(); p < 10*time.Second || p > 21*time.Second {
			t.Errorf("backend %d: horizon pttl %v, want between the ttl (10s) and twice it plus 1s", i, p)
		}
	}
}

// TestRedisAutoQuarantineAllRestarted: every backend restarts at once, so
// none keeps a horizon. The proxy that granted a 3s lock quarantines each
// for its own record of it; a second proxy, which granted nothing and so
// knows nothing of that lock, quarantines each for the 24h cap.
func TestRedisAutoQuarantineAllRestarted(t *testing.T) {
	servers := redistest.StartN(t, 3)
	granter, other := proxyOver(t, servers, nil), proxyOver(t, servers, nil)
	ids := allSeen(t, granter)
	allSeen(t, other)
	if _, err := granter.Acquire(t.Context(), "k", "tok", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	lockEnd := time.Now().Add(3 * time.Second)
	for _, s := range servers {
		s.Kill()
	}
	for _, s := range servers {
		s.Restart(t)
	}
	for i := range servers {
		st := settledAfterRestart(t, granter, i, ids[i])
		if st.QuarantinedUntil.Before(lockEnd) || st.QuarantinedUntil.After(time.Now().Add(5*time.Second)) {
			t.Errorf("granting proxy: backend %d quarantined until %v, want its own record of the 3s lock (ends %v)",
				i, st.QuarantinedUntil.Format(time.StampMilli), lockEnd.Format(time.StampMilli))
		}
	}
	for i := range servers {
		var st quorum.NodeState
		poll(t, "the other proxy seeing the restart", func() bool {
			st = other.NodeStates()[i]
			return st.Up && st.RunID != ids[i]
		})
		if st.QuarantinedUntil.Before(time.Now().Add(23 * time.Hour)) {
			t.Errorf("other proxy: backend %d quarantined until %v, want the 24h cap", i, st.QuarantinedUntil.Format(time.StampMilli))
		}
	}
}

// TestRedisStartupAutoQuarantine is the start-up case under the defaults:
// a 1min lock is held on A and B (C lost it); A restarts empty; only then
// does a new proxy start, so it never sees A's run_id change. A started
// well after B and C, less than the cap ago, so the new proxy keeps A out
// for what the other backends' horizons say is left of that lock, and a
// second client cannot get it. A new proxy with the quarantine off is the
// negative control.
func TestRedisStartupAutoQuarantine(t *testing.T) {
	servers := redistest.StartN(t, 3)
	a, c := servers[0], servers[2]
	first := proxyOver(t, servers, nil)
	allSeen(t, first)
	if _, err := first.Acquire(t.Context(), wakeKey, "first", time.Minute); err != nil {
		t.Fatal(err)
	}
	lockEnd := time.Now().Add(time.Minute)
	if err := c.Client().Del(t.Context(), wakeKey).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[1:] {
		poll(t, "backend "+s.Addr()+" up for 5s", func() bool { return uptime(t, s) >= 5*time.Second })
	}
	a.Restart(t)

	cl := proxyOver(t, servers, nil)
	allSeen(t, cl)
	var st quorum.NodeState
	poll(t, "A's start-up quarantine set from the horizons", func() bool {
		st = cl.NodeStates()[0]
		return st.QuarantinedUntil.Before(time.Now().Add(23 * time.Hour))
	})
	if !st.Quarantined || st.QuarantinedUntil.Before(lockEnd) {
		t.Fatalf("A after the new proxy's start: %+v, want quarantined until the lock can expire (%v)", st, lockEnd.Format(time.StampMilli))
	}
	if s := cl.NodeStates(); s[1].Quarantined || s[2].Quarantined {
		t.Fatalf("B or C quarantined: %+v", s)
	}
	if _, err := cl.Acquire(t.Context(), wakeKey, "second", time.Minute); err == nil {
		t.Fatal("a second client got the lock the first still holds")
	}
	poll(t, "the failed round's release", func() bool { return keyGone(t, a) && keyGone(t, c) })
	ctl := freshProxy(t, servers, 0)
	if _, err := ctl.Acquire(t.Context(), wakeKey, "second", time.Minute); err != nil {
		t.Fatalf("negative control, quarantine off: %v, want the lock (A's vote counts)", err)
	}
}
