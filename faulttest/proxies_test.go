package faulttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// Two redlockd processes in front of the same backends, end to end: the
// clients speak RESP to the real binary, and one process is SIGKILLed while
// its clients hold locks.

func respClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// lock sends LOCK key ttl and returns the token and validity, or ok false
// when the lock is held elsewhere (a null reply).
func lock(ctx context.Context, c *redis.Client, key string, ttl time.Duration) (token string, validity time.Duration, ok bool, err error) {
	res, err := c.Do(ctx, "LOCK", key, ttl.Milliseconds()).Slice()
	if errors.Is(err, redis.Nil) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	if len(res) < 2 {
		return "", 0, false, fmt.Errorf("LOCK reply %v", res)
	}
	tok, _ := res[0].(string)
	ms, _ := res[1].(int64)
	return tok, time.Duration(ms) * time.Millisecond, true, nil
}

func TestTwoProxyProcesses(t *testing.T) {
	servers := redistest.StartN(t, 3)
	bin := redlocktest.Build(t, "./cmd/redlockd")
	a := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")
	b := redlocktest.StartProcess(t, bin, servers, "--node-timeout", "200ms")

	t.Run("contention", func(t *testing.T) {
		res := contendRESP(t, []string{a.Addr, b.Addr}, 6, 2, lockTTL, runFor())
		report(t, res)
	})

	t.Run("SIGKILL frees the locks after their ttl", func(t *testing.T) {
		const ttl = 1500 * time.Millisecond
		const margin = 300 * time.Millisecond
		ca, cb := respClient(t, a.Addr), respClient(t, b.Addr)
		keys := []string{"killed:1", "killed:2", "killed:3"}
		taken := map[string]time.Time{} // when A's LOCK returned: the ttl runs out after that
		for _, k := range keys {
			if _, _, ok, err := lock(ctxT(t, 5*time.Second), ca, k, ttl); !ok || err != nil {
				t.Fatalf("LOCK %s through A: %v %v", k, ok, err)
			}
			taken[k] = time.Now()
		}
		a.Signal(t, syscall.SIGKILL)
		freed := make(map[string]time.Time)
		for len(freed) < len(keys) {
			now := time.Now()
			if now.After(taken[keys[len(keys)-1]].Add(ttl + 5*time.Second)) {
				t.Fatalf("locks freed: %v; not all within the ttl plus 5s", freed)
			}
			for _, k := range keys {
				if _, done := freed[k]; done {
					continue
				}
				tok, _, ok, err := lock(ctxT(t, 5*time.Second), cb, k, ttl)
				if err != nil {
					t.Fatalf("LOCK %s through B: %v", k, err)
				}
				if ok {
					if d := now.Sub(taken[k]); d < ttl-margin {
						t.Fatalf("B took %s %v after A did, before A's ttl (%v) ran out", k, d, ttl)
					}
					freed[k] = now
					cb.Do(ctxT(t, 5*time.Second), "UNLOCK", k, tok)
				}
			}
			time.Sleep(20 * time.Millisecond) // pacing the polls
		}
		for k, at := range freed {
			t.Logf("%s free %v after A took it (ttl %v)", k, at.Sub(taken[k]).Round(time.Millisecond), ttl)
		}
	})
}

// contendRESP runs clients spread over the proxies' addresses, each
// looping LOCK → read-modify-write of the key's counter → UNLOCK, and
// returns the history's verdict.
func contendRESP(t *testing.T, addrs []string, clients, keys int, ttl, dur time.Duration) check.Result {
	t.Helper()
	rec := check.NewRecorder()
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i := range clients {
		c := respClient(t, addrs[i%len(addrs)])
		wg.Add(1)
		go func() {
			defer wg.Done()
			respClientLoop(c, rec, fmt.Sprintf("c%d@%d", i, i%len(addrs)), keys, ttl, stop, i)
		}()
	}
	wg.Wait()
	return rec.Check()
}

func respClientLoop(c *redis.Client, rec *check.Recorder, name string, keys int, ttl time.Duration, stop time.Time, seed int) {
	ctx := context.Background()
	for n := seed; time.Now().Before(stop); n++ {
		key := fmt.Sprintf("lock:%d", n%keys)
		t0 := time.Now()
		tok, validity, ok, err := lock(ctx, c, key, ttl)
		got := time.Now()
		class := ""
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "NOQUORUM"):
			class = "noquorum"
		case err != nil:
			class = "other"
		case !ok:
			class = "contended"
		}
		rec.Attempt(t0, got, ok, class)
		if !ok {
			continue
		}
		h := rec.Begin(name, key, t0, got, validity)
		h.Increment(50 * time.Microsecond)
		h.End()
		c.Do(ctx, "UNLOCK", key, tok)
	}
}
