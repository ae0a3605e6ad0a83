package commands

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/quorum"
)

// TestReplicatedScriptOnKeptLocks: a replicated script that releases a
// KEEPALIVE lock or a session lock of this proxy ends its renewal as
// UNLOCK does: no loss is counted and no renewal puts the key back. A
// script that leaves a kept lock as it was (another client's release with
// the wrong token, a refresh by the holder) does not stop its renewal: the
// lock would expire under its holder. A control lock shows time went by.
func TestReplicatedScriptOnKeptLocks(t *testing.T) {
	servers := redistest.StartN(t, 3)
	h := redisHandlerCfg(t, servers, Options{}, func(c *quorum.Config) {
		c.NodeTimeout = time.Second
		c.SessionTTL = 1500 * time.Millisecond
	})
	f := client(t, h)
	keepLock(t, f, "ctl", "ctl-token")
	keepLock(t, f, "kept", "tok")
	keepLock(t, f, "other", "mine")
	keepLock(t, f, "fresh", "tok")
	if got := f.do("SET", "session", "tok"); got != "+OK" {
		t.Fatalf("SET session tok (a session lock) = %s", got)
	}
	if st := h.KeepaliveStats(); st.Held != 5 {
		t.Fatalf("KeepaliveStats = %+v, want 5 held", st)
	}
	for _, key := range []string{"kept", "session"} {
		if got := f.do(eval(semaphoreRelease, k1(key), "tok")...); got != ":1" {
			t.Fatalf("release of %s by script = %s", key, got)
		}
	}
	if got := f.do(eval(semaphoreRelease, k1("other"), "wrong")...); got != ":0" {
		t.Fatalf("release of other with a wrong token = %s", got)
	}
	if got := f.do(eval(semaphoreRefresh, k1("fresh"), "tok", keptTTL)...); got != ":1" {
		t.Fatalf("refresh of fresh by script = %s", got)
	}
	renewals(t, servers[0], "ctl", 5)
	renewals(t, servers[0], "other", 1)
	renewals(t, servers[0], "fresh", 1)
	if st := h.KeepaliveStats(); st.Lost != 0 || st.Held != 3 {
		t.Errorf("KeepaliveStats = %+v, want 3 held (ctl, other, fresh) and none lost", st)
	}
	for _, key := range []string{"kept", "session"} {
		for i, s := range servers {
			if n, err := s.Client().Exists(context.Background(), key).Result(); err != nil || n != 0 {
				t.Errorf("backend %d holds %s after its release by script: %d, %v", i, key, n, err)
			}
		}
	}
}
