package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// A kept owner lock is restored on a node that lost it with the hold count
// of the nodes that kept it.
func TestKeepRestoresOwnerHolds(t *testing.T) {
	ctx := context.Background()
	c, mems := memCluster(t)
	r, err := c.LockOwner(ctx, "k", "w", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tok := r.Token
	waitFor(t, "every node holds the token", func() bool {
		for _, m := range mems {
			if got, _, _, _ := nodetest.Get(ctx, m, "k"); got != tok {
				return false
			}
		}
		return true
	})
	if r, err = c.LockOwner(ctx, "k", "w", 10*time.Second); err != nil || r.Token != tok {
		t.Fatalf("second hold: %+v, %v", r, err)
	}
	l := r.Lock
	k := c.Keep("k", tok, time.Second, l.Validity, func(err error) { t.Errorf("lost: %v", err) })
	defer k.Stop(false)
	nodetest.Delete(ctx, mems[2], "k", false)
	nodetest.Delete(ctx, mems[2], quorum.HoldsKey("k"), false)
	waitFor(t, "the third node's hold count restored as 2", func() bool {
		got, _, _, _ := nodetest.Get(ctx, mems[2], quorum.HoldsKey("k"))
		return got == tok+" 2"
	})
	if got, _, _, _ := nodetest.Get(ctx, mems[2], "k"); got != tok {
		t.Fatalf("the third node holds %q, want the owner's token", got)
	}
}
