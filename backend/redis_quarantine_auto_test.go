package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// These tests play the auto restart quarantine's failures over real
// redis-servers, killed and started again empty: a quarantine lengthened by
// grants made after the restart or by failed tries, a new proxy's day-long
// quarantine of servers started seconds apart, a horizon longer than
// max-ttl, and a log line per re-read.

// logLines keeps every log line's message and backend.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "backend" {
			line += " backend=" + a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// count is how many lines hold every one of parts.
func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// loggedProxy is proxyOver with its log kept, and MaxTTL maxTTL (0: the
// default).
func loggedProxy(t *testing.T, servers []*redistest.Server, maxTTL time.Duration) (*quorum.Cluster, *logLines) {
	logs := &logLines{}
	cl := proxyOver(t, servers, func(c *quorum.Config) {
		c.Logger = slog.New(logs)
		if maxTTL > 0 {
			c.MaxTTL = maxTTL
		}
	})
	return cl, logs
}

// settled waits until backend i runs a quarantine other than of run_id old
// that no longer waits for a read, and returns its state.
func settled(t *testing.T, cl *quorum.Cluster, i int, old string) quorum.NodeState {
	t.Helper()
	var st quorum.NodeState
	poll(t, fmt.Sprintf("backend %d's restart seen and its quarantine settled", i), func() bool {
		st = cl.NodeStates()[i]
		return st.Up && st.RunID != old && (!st.Quarantined || !st.QuarantinePending)
	})
	return st
}

// votesAgain waits, within bound, until backend i's quarantine has ended,
// failing when it is ever reported to end after latest.
func votesAgain(t *testing.T, cl *quorum.Cluster, i int, latest time.Time, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		st := cl.NodeStates()[i]
		if st.Quarantined && st.QuarantinedUntil.After(latest) {
			t.Fatalf("backend %d quarantined until %v, later than %v", i,
				st.QuarantinedUntil.Format(time.StampMilli), latest.Format(time.StampMilli))
		}
		if !st.Quarantined {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d still quarantined after %v: %+v", i, bound, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keepLocking takes ttl locks on fresh keys, one at a time, until the test
// ends, whatever the answers.
func keepLocking(t *testing.T, cl *quorum.Cluster, ttl time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for n := 0; ctx.Err() == nil; n++ {
			_, _ = cl.Acquire(ctx, fmt.Sprintf("busy-%d", n), "tok", ttl)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

// oneStartOneEnd checks that backend i's quarantine logged one line when it
// started and one when it ended, and no other.
func oneStartOneEnd(t *testing.T, logs *logLines, name string) {
	t.Helper()
	b := "backend=" + name
	if n := logs.count("backend restarted", b); n != 1 {
		t.Errorf("%d start lines for %s, want 1; log:\n%s", n, name, logs)
	}
	if n := logs.count("quarantine ended", b); n != 1 {
		t.Errorf("%d end lines for %s, want 1; log:\n%s", n, name, logs)
	}
	if n := logs.count("quarantine", b); n != 2 {
		t.Errorf("%d quarantine lines for %s, want 2; log:\n%s", n, name, logs)
	}
}

// TestRedisAutoQuarantineIgnoresLaterGrants: max-ttl 5s. C is down while
// a 5s lock is taken on A and B; C comes back empty, another 5s lock is
// taken on A and B a while later, 3s locks start being taken every 50ms,
// and A restarts empty. C's quarantine ends before A's, and the 3s locks
// granted on B and C from then on raise their horizons: A's quarantine
// covers only what was on A at its restart, so it never ends later than
// the cap (max-ttl plus a second) from its restart.
func TestRedisAutoQuarantineIgnoresLaterGrants(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cl, logs := loggedProxy(t, servers, 5*time.Second)
	ids := allSeen(t, cl)
	servers[2].Kill()
	poll(t, "C down", func() bool { return !cl.NodeStates()[2].Up })
	if _, err := cl.Acquire(t.Context(), "q", "tok", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	servers[2].Restart(t)
	settled(t, cl, 2, ids[2])
	waitUptime(t, servers[2], 2*time.Second) // C's quarantine ends well before A's
	if _, err := cl.Acquire(t.Context(), "r", "tok", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	keepLocking(t, cl, 3*time.Second)
	servers[0].Restart(t)
	restarted := time.Now()
	st := settled(t, cl, 0, ids[0])
	if st.QuarantinePending {
		t.Errorf("A's quarantine not conclusive although B and C's settled quarantine cover it: %+v", st)
	}
	votesAgain(t, cl, 2, restarted.Add(6*time.Second), 15*time.Second)
	votesAgain(t, cl, 0, restarted.Add(6*time.Second+500*time.Millisecond), 15*time.Second)
	poll(t, "A's end logged", func() bool { return logs.count("quarantine ended", "backend="+servers[0].Addr()) > 0 })
	oneStartOneEnd(t, logs, servers[0].Addr())
}

// TestRedisAutoQuarantineIgnoresFailedTries: the default max-ttl, one 5s
// lock; A and C restart empty together, so no majority can be had, and
// clients keep trying 5s locks, each failing. Both quarantines still end
// once the 5s lock and its horizon slack have run out, each logged once
// when it starts and once when it ends.
func TestRedisAutoQuarantineIgnoresFailedTries(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cl, logs := loggedProxy(t, servers, 0)
	ids := allSeen(t, cl)
	if _, err := cl.Acquire(t.Context(), "q", "tok", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The horizon of a 5s lock is at most twice it, plus the drift.
	latest := time.Now().Add(11 * time.Second)
	servers[0].Kill()
	servers[2].Kill()
	servers[0].Restart(t)
	servers[2].Restart(t)
	settledAfterRestart(t, cl, 0, ids[0])
	settledAfterRestart(t, cl, 2, ids[2])
	keepLocking(t, cl, 5*time.Second)
	votesAgain(t, cl, 0, latest, 30*time.Second)
	votesAgain(t, cl, 2, latest, 30*time.Second)
	for _, i := range []int{0, 2} {
		name := servers[i].Addr()
		poll(t, name+"'s end logged", func() bool { return logs.count("quarantine ended", "backend="+name) > 0 })
		oneStartOneEnd(t, logs, name)
	}
}

// waitUptime waits until the server has been up for at least d.
func waitUptime(t *testing.T, s *redistest.Server, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d + 10*time.Second)
	for uptime(t, s) < d {
		if time.Now().After(deadline) {
			t.Fatalf("%s not up for %v", s.Addr(), d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedisAutoQuarantineServersStartedApart: a new proxy over three
// servers started about 3s apart, which never granted a lock. The
// start-up rule quarantines the younger ones for what the older ones'
// horizons tell (nothing), not for the 24h cap: every backend votes within
// seconds and INFO says so.
func TestRedisAutoQuarantineServersStartedApart(t *testing.T) {
	servers := []*redistest.Server{redistest.Start(t)}
	for range 2 {
		waitUptime(t, servers[len(servers)-1], 3*time.Second)
		servers = append(servers, redistest.Start(t))
	}
	cl, _ := loggedProxy(t, servers, 0)
	for i := range servers {
		st := settled(t, cl, i, "")
		if st.Quarantined && st.QuarantinedUntil.After(time.Now().Add(time.Minute)) {
			t.Errorf("backend %d quarantined until %v: the cap, although no lock was ever granted", i, st.QuarantinedUntil)
		}
	}
	for i := range servers {
		votesAgain(t, cl, i, time.Now().Add(time.Minute), 10*time.Second)
	}
	if _, err := cl.Acquire(t.Context(), "k", "tok", time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestRedisHorizonReadClamped: max-ttl 5s, and B's and C's horizons were
// set to 48h by hand. A restart of A reads them as max-ttl plus the slack:
// A votes again within the cap, and each backend's long horizon is logged
// once, also over a second restart.
func TestRedisHorizonReadClamped(t *testing.T) {
	servers := redistest.StartN(t, 3)
	for _, s := range servers[1:] {
		if err := s.Client().Set(t.Context(), horizonKey, "1", 48*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cl, logs := loggedProxy(t, servers, 5*time.Second)
	ids := allSeen(t, cl)
	for range 2 {
		servers[0].Restart(t)
		restarted := time.Now()
		settled(t, cl, 0, ids[0])
		votesAgain(t, cl, 0, restarted.Add(7*time.Second), 15*time.Second)
		ids[0] = nodeSeen(t, cl, 0, "").RunID
	}
	for _, s := range servers[1:] {
		if n := logs.count("longer than max-ttl", "backend="+s.Addr()); n != 1 {
			t.Errorf("%d lines about %s's long horizon, want 1; log:\n%s", n, s.Addr(), logs)
		}
	}
}
