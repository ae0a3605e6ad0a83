package e2e

import (
	"fmt"
	"testing"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestDBSizeWithoutMajority: where no two backends hold as many keys,
// DBSIZE answers the smallest count, as the changelog says; where two
// agree, their count.
func TestDBSizeWithoutMajority(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	ctx := ctxT(t)
	fill := func(i, n int) {
		t.Helper()
		for k := range n {
			if err := in.Backends[i].Client().Set(ctx, fmt.Sprintf("size:%d:%d", i, k), "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(0, 2)
	fill(1, 3)
	fill(2, 4)
	if n, err := c.DBSize(ctx).Result(); n != 2 || err != nil {
		t.Errorf("DBSIZE over 2, 3 and 4 keys = %d, %v; want the smallest, 2", n, err)
	}
	fill(0, 3) // backend 0 now holds 3 keys, as backend 1 does
	if n, err := c.DBSize(ctx).Result(); n != 3 || err != nil {
		t.Errorf("DBSIZE over 3, 3 and 4 keys = %d, %v; want the majority's 3", n, err)
	}
}
