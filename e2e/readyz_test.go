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
