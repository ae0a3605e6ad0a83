package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartClusterServesEverySlot(t *testing.T) {
	c := StartCluster(t, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, m := range c.Masters {
		slot := i * Slots / 3
		c.WaitMaster(t, slot, m)
	}
	for i, r := range c.Replicas {
		info, err := r.Client().Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !contains(info, "role:slave") || !contains(info, ":"+itoa(c.Masters[i].Port())+"\r\n") {
			t.Fatalf("replica %d does not copy master %d:\n%s", i, i, info)
		}
	}
}

func TestMigrateSlotMovesKeys(t *testing.T) {
	c := StartCluster(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// "foo" hashes to slot 12182, which the second master serves.
	from, to := c.Masters[1], c.Masters[0]
	if err := from.Client().Set(ctx, "foo", "bar", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.MigrateSlot(t, 12182, from, to)
	c.WaitMaster(t, 12182, to)
	if v, err := to.Client().Get(ctx, "foo").Result(); err != nil || v != "bar" {
		t.Fatalf("GET foo on the new master: %q, %v", v, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
func itoa(n int) string           { return strconv.Itoa(n) }
