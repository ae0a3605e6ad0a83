package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// TestMemoryReportsChanges: the in-memory node reports the keys its
// commands changed (not those they only read or left as they were) and
// the keys that expired, without a read touching them, after a nil that
// says its reports have begun.
func TestMemoryReportsChanges(t *testing.T) {
	m := New("m")
	t.Cleanup(func() { m.Close() })
	ch := nodetest.WatchInvalidated(m)
	call := func(cmd quorum.Cmd) quorum.Reply {
		t.Helper()
		return quorum.Call(context.Background(), m, cmd)
	}
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "a", Token: "t", TTL: time.Minute})
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "a", Token: "u", TTL: time.Minute}) // refused: no change
	call(quorum.Cmd{Kind: quorum.Get, Key: "a"})
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "b", Token: "t", TTL: 150 * time.Millisecond, DB: 2})
	var got []string
	for len(got) < 4 {
		select {
		case k := <-ch:
			got = append(got, k)
		case <-time.After(20 * time.Second):
			t.Fatalf("reports so far %q, want the start, a, b and b's expiry", got)
		}
	}
	if want := "[* a b b]"; fmt.Sprint(got) != want {
		t.Fatalf("reports %q, want %s", got, want)
	}
}
