package backend

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestRedisStartupQuarantine: a lock is held on A and B; A restarts empty;
// only then does a new proxy start, so it never sees A's run_id change. It
// must still keep A out of the votes, from A's uptime being below the
// quarantine while B's and C's are not. A second new proxy with the
// quarantine off is the negative control: A's vote hands the lock to a
// second client while B still holds it for the first.
func TestRedisStartupQuarantine(t *testing.T) {
	// Short, since B and C must have been up for longer than it; long
	// enough that A's remaining quarantine outlasts the checks below.
	const quarantine = 5 * time.Second
	servers := redistest.StartN(t, 3)
	a, b := servers[0], servers[1]
	for _, s := range []*redistest.Server{a, b} {
		if err := s.Client().Set(t.Context(), wakeKey, "first", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range servers[1:] {
		poll(t, "backend "+s.Addr()+" up for the quarantine", func() bool {
			return uptime(t, s) >= quarantine
		})
	}
	a.Restart(t)

	cl := freshProxy(t, servers, quarantine)
	if st := cl.NodeStates(); !st[0].Quarantined || st[1].Quarantined || st[2].Quarantined {
		t.Fatalf("new proxy after A's restart: states %+v, want only A quarantined", st)
	}
	_, err := cl.Acquire(t.Context(), wakeKey, "second", time.Minute)
	if !errors.Is(err, quorum.ErrNotAcquired) && !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("second client through the new proxy: %v, want the lock refused", err)
	}
	if st := cl.NodeStates()[0]; !st.Quarantined {
		t.Fatalf("A's quarantine ended before the check was done (slow machine?): %+v", st)
	}

	// The failed round's release clears A and C before the control runs.
	poll(t, "the failed round's release", func() bool {
		return keyGone(t, a) && keyGone(t, servers[2])
	})
	ctl := freshProxy(t, servers, 0)
	if _, err := ctl.Acquire(t.Context(), wakeKey, "second", time.Minute); err != nil {
		t.Fatalf("negative control, quarantine off: %v, want the lock (A's vote counts)", err)
	}
}

// freshProxy is a new proxy over the servers, once it has looked at each.
func freshProxy(t *testing.T, servers []*redistest.Server, quarantine time.Duration) *quorum.Cluster {
	t.Helper()
	cl := proxyOver(t, servers, withQuarantine(quarantine))
	for i := range servers {
		nodeSeen(t, cl, i, "")
	}
	return cl
}

// uptime is the server's uptime_in_seconds; 0 when it cannot be read.
func uptime(t *testing.T, s *redistest.Server) time.Duration {
	t.Helper()
	return uptimeOf(t, s.Client())
}

// uptimeOf is uptime through any client of the server.
func uptimeOf(t *testing.T, c *redis.Client) time.Duration {
	t.Helper()
	text, err := c.Info(t.Context(), "server").Result()
	if err != nil {
		return 0
	}
	return parseServerInfo(text).Uptime
}

func keyGone(t *testing.T, s *redistest.Server) bool {
	t.Helper()
	n, err := s.Client().Exists(t.Context(), wakeKey).Result()
	return err == nil && n == 0
}
