package backend

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// proxyOverDB is proxyOver with every backend URL naming database db.
func proxyOverDB(t *testing.T, servers []*redistest.Server, db string) *quorum.Cluster {
	t.Helper()
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		r, err := NewRedis("redis://"+s.Addr()+"/"+db, RedisOptions{HealthInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		nodes[i] = r
	}
	return clusterOf(t, nodes, nil)
}

// TestRedisHorizonInServerDBZero: p1's backend URLs name db 2, p2's none,
// so p1's database 0 and p2's database 2 are one lock space. A 10 min
// lock taken through p1 must raise the one horizon both proxies read:
// after two backends restart empty, one after the other, both proxies
// quarantine both for the lock's life, and p2 refuses the key in its
// database 2.
func TestRedisHorizonInServerDBZero(t *testing.T) {
	servers := redistest.StartN(t, 3)
	p1, p2 := proxyOverDB(t, servers, "2"), proxyOver(t, servers, nil)
	ids := allSeen(t, p1)
	allSeen(t, p2)
	if _, err := p1.Acquire(t.Context(), "k", "x", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	lockEnd := time.Now().Add(10 * time.Minute)
	for i, srv := range servers {
		// The round may answer before the last backend's raise is in.
		poll(t, fmt.Sprintf("backend %d's horizon, in its db 0, to cover the 10m lock", i), func() bool {
			return srv.Client().PTTL(t.Context(), horizonKey).Val() >= 10*time.Minute
		})
	}
	for _, i := range []int{0, 1} {
		servers[i].Restart(t)
		for name, p := range map[string]*quorum.Cluster{"p1": p1, "p2": p2} {
			st := settledAfterRestart(t, p, i, ids[i])
			if st.QuarantinedUntil.Before(lockEnd) {
				t.Errorf("%s: backend %d quarantined until %v, before the 10m lock can expire (%v)",
					name, i, st.QuarantinedUntil.Format(time.StampMilli), lockEnd.Format(time.StampMilli))
			}
		}
	}
	if _, err := p2.DB(2).Acquire(t.Context(), "k", "y", 10*time.Second); err == nil {
		t.Fatal("p2 granted, in its db 2, the key p1 holds in its db 0 (the same server db) for 10 minutes")
	}
}
