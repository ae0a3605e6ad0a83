package faulttest

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/internal/redlocktest"
)

// TestKeptHoldKeepsLongerHold: an OWNER lock has a KEEPALIVE hold with a
// short ttl on proxy A and a hold with a longer ttl on proxy B. A's
// renewals must not shorten the lock below B's validity: once A has
// renewed and is then killed (its renewals stop, nothing is released), no
// other owner is granted the lock before B's validity has run out.
func TestKeptHoldKeepsLongerHold(t *testing.T) {
	servers := redistest.StartN(t, 3)
	bin := redlocktest.Build(t, "./cmd/redlockd")
	pa := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
	pb := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
	a, b := respClient(t, pa.Addr), respClient(t, pb.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Do(ctx, "LOCK", "k", 600, "OWNER", "w", "KEEPALIVE").Err(); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	res, err := b.Do(ctx, "LOCK", "k", 4000, "OWNER", "w").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("B's LOCK = %v, %v", res, err)
	}
	validUntil := sent.Add(time.Duration(res[1].(int64)) * time.Millisecond)
	// Two renewals by A after B's grant: the first may have been in flight.
	base := extendsOK(ctx, t, a)
	waitFor(t, "two renewals by proxy A", func() bool { return extendsOK(ctx, t, a) >= base+2 })
	pa.Signal(t, syscall.SIGKILL)
	probe := respClient(t, pb.Addr)
	for time.Now().Before(validUntil) {
		err := probe.Do(ctx, "LOCK", "k", 1000, "OWNER", "other").Err()
		if err == nil && time.Now().Before(validUntil) {
			t.Fatalf("another owner was granted the lock %v before B's validity ended", time.Until(validUntil))
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // pacing the probes over B's validity
	}
}

var extendOKLine = regexp.MustCompile(`quorum_extend_ok:(\d+)`)

// extendsOK reads the proxy's count of successful extends from INFO.
func extendsOK(ctx context.Context, t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(ctx, "locks").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := extendOKLine.FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO locks has no quorum_extend_ok: %q", info)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
