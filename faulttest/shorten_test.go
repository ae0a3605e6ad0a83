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

	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
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
	probeUntil(ctx, t, respClient(t, pb.Addr), validUntil, "LOCK", "k", 1000, "OWNER", "other")
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

// TestKeptLockKeepsRenewedValidity: a KEEPALIVE lock with a short ttl is
// extended by its client with a longer one (RENEW, SET … XX PX … IFEQ).
// The proxy's renewals must not shorten it below the validity the client
// was told: once the proxy has renewed and is then killed, no other client
// is granted the lock before that validity has run out.
func TestKeptLockKeepsRenewedValidity(t *testing.T) {
	extend := map[string]func(ctx context.Context, c *redis.Client, tok string) (time.Duration, error){
		"RENEW": func(ctx context.Context, c *redis.Client, tok string) (time.Duration, error) {
			v, err := c.Do(ctx, "RENEW", "k", tok, 4000).Int64()
			return time.Duration(v) * time.Millisecond, err
		},
		// The client is told OK: it counts on the ttl, less its own drift
		// allowance (1% and 2ms, as the proxy's).
		"SET IFEQ": func(ctx context.Context, c *redis.Client, tok string) (time.Duration, error) {
			err := c.Do(ctx, "SET", "k", tok, "XX", "PX", 4000, "IFEQ", tok).Err()
			return 4000*time.Millisecond*99/100 - 2*time.Millisecond, err
		},
	}
	for name, f := range extend {
		t.Run(name, func(t *testing.T) { keptLockKeepsExtended(t, f) })
	}
}

func keptLockKeepsExtended(t *testing.T, extend func(ctx context.Context, c *redis.Client, tok string) (time.Duration, error)) {
	servers := redistest.StartN(t, 3)
	bin := redlocktest.Build(t, "./cmd/redlockd")
	pa := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
	pb := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
	a := respClient(t, pa.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.Do(ctx, "LOCK", "k", 600, "KEEPALIVE").Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK = %v, %v", res, err)
	}
	sent := time.Now()
	v, err := extend(ctx, a, res[0].(string))
	if err != nil {
		t.Fatal(err)
	}
	validUntil := sent.Add(v)
	base := extendsOK(ctx, t, a)
	waitFor(t, "two renewals by the proxy", func() bool { return extendsOK(ctx, t, a) >= base+2 })
	pa.Signal(t, syscall.SIGKILL)
	probeUntil(ctx, t, respClient(t, pb.Addr), validUntil, "LOCK", "k", 1000)
}

// probeUntil sends cmd (a LOCK) through c until validUntil: none of them
// may be granted.
func probeUntil(ctx context.Context, t *testing.T, c *redis.Client, validUntil time.Time, cmd ...any) {
	t.Helper()
	for time.Now().Before(validUntil) {
		err := c.Do(ctx, cmd...).Err()
		if err == nil && time.Now().Before(validUntil) {
			t.Fatalf("%v granted %v before the holder's validity ended", cmd, time.Until(validUntil))
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // pacing the probes over the validity
	}
}
