package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestBackendsReadyWhileQuarantined: over real backends, /readyz/backends
// is 200 while every backend votes, 503 naming the restarted backend while
// its restart quarantine lasts (?backend= of another is 200 meanwhile),
// and 200 again once the quarantine is over: the wait of the drain
// procedure in docs/operations.md.
func TestBackendsReadyWhileQuarantined(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{
		Quorum: func(c *quorum.Config) { c.RestartQuarantine = quorum.QuarantineAuto },
	})
	c := in.Client(t, 2)
	pollFor(t, "every backend votes", func() bool {
		code, _ := in.Page(t, "/readyz/backends")
		return code == http.StatusOK
	})
	olderThanARestart(t, in)
	lock(t, c, "drain", 1000)
	old := in.Cluster.NodeStates()[0].RunID
	in.Backends[0].Restart(t)
	pollFor(t, "the restart seen and its quarantine set", func() bool {
		st := in.Cluster.NodeStates()[0]
		return st.RunID != old && st.Quarantined && !st.QuarantinePending
	})
	restarted := in.Cluster.NodeStates()[0].Name
	if code, body := in.Page(t, "/readyz/backends"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, restarted+" quarantined: restarted") {
		t.Fatalf("/readyz/backends during %s's quarantine = %d %q", restarted, code, body)
	}
	other := in.Cluster.NodeStates()[1].Name
	if code, body := in.Page(t, "/readyz/backends?backend="+other); code != http.StatusOK || body != other+" up\n" {
		t.Errorf("/readyz/backends?backend=%s during another's quarantine = %d %q", other, code, body)
	}
	pollFor(t, "/readyz/backends 200 once the quarantine is over", func() bool {
		code, _ := in.Page(t, "/readyz/backends")
		return code == http.StatusOK
	})
}

// TestWaitersAndVotesServed: over real backends, /metrics and the status
// page count a LOCK … WAIT while it waits and not after its grant, and
// /metrics gives the quorum and the backends that vote.
func TestWaitersAndVotesServed(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	pollFor(t, "every backend votes", func() bool {
		_, body := in.Page(t, "/metrics")
		return strings.Contains(body, "\nredlockd_backends_voting 3\n") && strings.Contains(body, "\nredlockd_quorum 2\n")
	})
	tok, _ := lock(t, c, "waited", 60000)
	waiter := lockWaiting(t, c, "waited")
	if _, body := in.Page(t, "/metrics"); !strings.Contains(body, "\nredlockd_lock_waiters 1\n") {
		t.Fatalf("/metrics while one LOCK … WAIT waits lacks redlockd_lock_waiters 1:\n%s", body)
	}
	if _, page := in.Page(t, "/"); !strings.Contains(page, "<th>waiting now (LOCK … WAIT)</th><td>1</td>") {
		t.Errorf("status page while one LOCK … WAIT waits:\n%s", page)
	}
	if n, err := c.Do(ctxT(t), "UNLOCK", "waited", tok).Int(); n != 1 || err != nil {
		t.Fatalf("UNLOCK = %d, %v", n, err)
	}
	if r := <-waiter; r.err != nil || len(r.res) != 2 {
		t.Fatalf("the waiter's LOCK … WAIT = %v, %v; want a grant", r.res, r.err)
	}
	if _, body := in.Page(t, "/metrics"); !strings.Contains(body, "\nredlockd_lock_waiters 0\n") {
		t.Errorf("/metrics after the grant lacks redlockd_lock_waiters 0:\n%s", body)
	}
}
