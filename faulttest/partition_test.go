package faulttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/faults"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// A lock granted after a network partition heals is not deleted by the
// undo of the same token's earlier, failed tries. Proxy A reaches the
// three backends over one link, proxy B over another; A's link is cut
// (packets vanish) while a client keeps trying through A with one token,
// so A queues releases of that token that cannot arrive, and its
// connections hold unsent ones; then the link heals and the try is
// granted. For the grant's whole validity the token must stay on a
// majority of backends, B must not get the key, and the holder's UNLOCK
// must find it.
//
// The heal comes staleAfter past the cut: long after A gave up on the
// connections it had when the link broke (TCP would deliver their unsent
// bytes, a release among them, once the link is back) and after the
// holder's lock expired.
func TestPartitionHealedGrantOutlivesEarlierTries(t *testing.T) {
	for _, tc := range []struct {
		name string
		// holder: a lock taken through A before the cut, whose expiry
		// ends the wait; zero: none.
		holder time.Duration
		// try starts the client's tries through A with one token and
		// returns the granted token and its validity.
		try func(ctx context.Context, c *redis.Client, key string) (string, time.Duration, error)
	}{
		{
			name:   "LOCK WAIT keeps its token between rounds",
			holder: 3200 * time.Millisecond,
			try: func(ctx context.Context, c *redis.Client, key string) (string, time.Duration, error) {
				res, err := c.Do(ctx, "LOCK", key, grantTTL.Milliseconds(), "WAIT", 30000).Slice()
				if err != nil {
					return "", 0, err
				}
				tok, _ := res[0].(string)
				ms, _ := res[1].(int64)
				return tok, time.Duration(ms) * time.Millisecond, nil
			},
		},
		{
			name: "a client retries SET NX PX with its own token",
			try: func(ctx context.Context, c *redis.Client, key string) (string, time.Duration, error) {
				const tok = "retry-tok-1"
				for ctx.Err() == nil {
					start := time.Now()
					ok, err := c.SetNX(ctx, key, tok, grantTTL).Result()
					if err == nil && ok {
						return tok, grantTTL - time.Since(start) - grantTTL/100 - 2*time.Millisecond, nil
					}
					time.Sleep(50 * time.Millisecond) // the client's own retry pace
				}
				return "", 0, ctx.Err()
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split := faults.StartSplit(t, 3, 2)
			opts := redlocktest.Options{NodeTimeout: 200 * time.Millisecond}
			a := redlocktest.StartOverAddrs(t, split.Addrs(0), opts)
			b := redlocktest.StartOverAddrs(t, split.Addrs(1), opts)
			// A's client waits as long as the tries take: a client-side
			// timeout would send the command again, with another token.
			ca := redis.NewClient(&redis.Options{Addr: a.Addr, Protocol: 2, DisableIdentity: true, ReadTimeout: -1, MaxRetries: -1})
			t.Cleanup(func() { ca.Close() })
			cb := respClient(t, b.Addr)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			key := "part:k"
			if tc.holder > 0 {
				if _, _, ok, err := lock(ctx, ca, key, tc.holder); !ok || err != nil {
					t.Fatalf("holder's LOCK = %v, %v", ok, err)
				}
			}
			split.Cut(t, 0)
			healAt := time.Now().Add(staleAfter)
			type granted struct {
				tok string
				v   time.Duration
				at  time.Time
				err error
			}
			got := make(chan granted, 1)
			go func() {
				tok, v, err := tc.try(ctx, ca, key)
				got <- granted{tok, v, time.Now(), err}
			}()
			waitUntil(t, 20*time.Second, "A queued releases it could not deliver", func() bool {
				return sum(a.Cluster.PendingReleases()) > 0
			})
			if tc.holder > 0 {
				waitUntil(t, 20*time.Second, "the holder's lock expired on every backend", func() bool {
					return redlocktest.Count(redlocktest.ValuesAt(t, split.Addrs(1), 0, key), "<nil>") == 3
				})
			}
			time.Sleep(time.Until(healAt)) // when the link heals is the behaviour under test
			split.Heal(t, 0)
			g := <-got
			if g.err != nil {
				t.Fatalf("the tries through A: %v", g.err)
			}
			end := g.at.Add(g.v - 300*time.Millisecond)
			for time.Now().Before(end) {
				vals := redlocktest.ValuesAt(t, split.Addrs(1), 0, key)
				if n := redlocktest.Count(vals, g.tok); n < 2 {
					t.Fatalf("%v into the grant's validity of %v the backends hold %q: the grant was undone",
						time.Since(g.at).Round(time.Millisecond), g.v, vals)
				}
				if ok, err := cb.SetNX(ctx, key, "b-tok", time.Second).Result(); ok || err != nil && !errors.Is(err, redis.Nil) {
					t.Fatalf("B's SET NX during the grant's validity = %v, %v", ok, err)
				}
				time.Sleep(50 * time.Millisecond) // the validity is the behaviour under test
			}
			if n, err := ca.Do(ctx, "UNLOCK", key, g.tok).Int(); n != 1 || err != nil {
				t.Fatalf("holder's UNLOCK = %d, %v, want 1", n, err)
			}
		})
	}
}

const (
	grantTTL   = 8 * time.Second
	staleAfter = 4400 * time.Millisecond
)

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
