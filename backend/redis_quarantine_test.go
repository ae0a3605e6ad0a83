package backend

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

func withQuarantine(d time.Duration) func(*quorum.Config) {
	return func(c *quorum.Config) { c.RestartQuarantine = d }
}

// nodeSeen waits until the cluster has looked at node i's server and found
// a run_id other than not.
func nodeSeen(t *testing.T, c *quorum.Cluster, i int, not string) quorum.NodeState {
	t.Helper()
	var st quorum.NodeState
	poll(t, "a look at backend "+c.Nodes()[i].Name(), func() bool {
		st = c.NodeStates()[i]
		return st.Up && st.RunID != "" && st.RunID != not
	})
	return st
}

// TestRedisQuarantineOverlap is the overlap of the issue: a lock is taken
// on A and B while C is down; C comes back empty; A restarts empty. A
// second client must not get the lock while A is quarantined. With the
// quarantine off the same steps hand the lock to both clients, which shows
// that the test can fail.
func TestRedisQuarantineOverlap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		quarantine time.Duration
		wantSecond bool
	}{
		{"quarantine on", time.Minute, false},
		{"negative control: quarantine off", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := overlapScenario(t, tc.quarantine)
			if got != tc.wantSecond {
				t.Fatalf("second client acquired = %v, want %v", got, tc.wantSecond)
			}
		})
	}
}

// overlapScenario plays the scenario and reports whether the second client
// got the lock the first one still holds.
func overlapScenario(t *testing.T, quarantine time.Duration) bool {
	servers := redistest.StartN(t, 3)
	a, c := servers[0], servers[2]
	c.Kill()
	cl := proxyOver(t, servers, withQuarantine(quarantine))
	oldA := nodeSeen(t, cl, 0, "").RunID
	nodeSeen(t, cl, 1, "")

	first, err := cl.Acquire(t.Context(), wakeKey, "first", time.Minute)
	if err != nil {
		t.Fatalf("first client: %v", err)
	}
	c.Restart(t)
	nodeSeen(t, cl, 2, "")
	a.Restart(t)
	st := nodeSeen(t, cl, 0, oldA)
	if st.Quarantined != (quarantine > 0) {
		t.Fatalf("A after its restart: %+v", st)
	}
	// A few tries, each with its own connections' fate: a try that meets
	// a connection broken by the restart proves nothing either way.
	for range 5 {
		_, err := cl.Acquire(t.Context(), wakeKey, "second", time.Minute)
		if err == nil {
			t.Logf("second client got the lock while the first's was valid for %v more", first.Validity)
			return true
		}
		if quarantine > 0 && !errors.Is(err, quorum.ErrNotAcquired) && !errors.Is(err, quorum.ErrNoQuorum) {
			t.Fatalf("second client: %v", err)
		}
	}
	return false
}

func TestRedisQuarantineEnds(t *testing.T) {
	servers := redistest.StartN(t, 3)
	cl := proxyOver(t, servers, withQuarantine(300*time.Millisecond))
	old := nodeSeen(t, cl, 0, "").RunID
	servers[0].Restart(t)
	nodeSeen(t, cl, 0, old)
	servers[1].Kill() // the lock now needs A's vote
	var err error
	poll(t, "A's quarantine to end", func() bool {
		_, err = cl.Acquire(t.Context(), "k", "tok", time.Minute)
		return err == nil
	})
	if st := cl.NodeStates()[0]; st.Quarantined {
		t.Errorf("A still quarantined: %+v", st)
	}
}

func TestRedisRefusesDependentBackends(t *testing.T) {
	master := redistest.Start(t)
	other := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	tests := []struct {
		name    string
		addrs   []string
		refused int
		reason  string
	}{
		{"same server under two addresses", []string{master.Addr(), other.Addr(), "localhost:" + strconv.Itoa(master.Port())}, 2, "same server as " + master.Addr()},
		{"replica", []string{master.Addr(), other.Addr(), replica.Addr()}, 2, "it is a replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := make([]quorum.Node, len(tt.addrs))
			for i, addr := range tt.addrs {
				nodes[i] = newTestRedis(t, addr)
			}
			cl := clusterOf(t, nodes, nil)
			var st quorum.NodeState
			poll(t, "the refusal", func() bool {
				st = cl.NodeStates()[tt.refused]
				return st.Refused != ""
			})
			if !strings.Contains(st.Refused, tt.reason) {
				t.Errorf("Refused = %q, want it to mention %q", st.Refused, tt.reason)
			}
			// With the third backend silent, the master and the refused node
			// would make a majority: a read (which a replica answers, too)
			// must find too few votes instead.
			other.Stop()
			defer other.Cont()
			if _, err := cl.Get(t.Context(), "k"); !errors.Is(err, quorum.ErrRefused) {
				t.Errorf("Get = %v, want ErrRefused among the reasons", err)
			}
		})
	}
	t.Run("master with a replica is accepted", func(t *testing.T) {
		cl := clusterOf(t, []quorum.Node{newTestRedis(t, master.Addr())}, nil)
		poll(t, "the replica to be seen", func() bool { return cl.NodeStates()[0].Replicas > 0 })
		if st := cl.NodeStates()[0]; st.Refused != "" || st.Replica {
			t.Errorf("master state = %+v", st)
		}
	})
}
