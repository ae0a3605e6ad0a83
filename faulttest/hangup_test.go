package faulttest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/faults"
	"github.com/redlockd/redlockd/internal/redlocktest"
)

// TestHangUpDuringRound: a client hangs up while its LOCK … WAIT has an
// acquire round in flight (its SETs held by the fault proxies). Node calls
// outlive the cancellation, so the round wins; the proxy then releases what
// it won instead of leaving the lock to live its ttl with no holder.
func TestHangUpDuringRound(t *testing.T) {
	const delay = 500 * time.Millisecond
	e := faults.Start(t, 3)
	in := redlocktest.StartOverAddrs(t, e.Addrs(), redlocktest.Options{NodeTimeout: 10 * delay})
	var held atomic.Int32 // proxies holding the waiter's SET
	for _, b := range e.Backends {
		var once atomic.Bool
		b.Proxy.OnRequest(func(chunk []byte) {
			if bytes.Contains(chunk, []byte("gone-token")) && once.CompareAndSwap(false, true) {
				held.Add(1)
			}
		})
		b.Proxy.SetDelay(delay)
	}
	c, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "LOCK k 60000 WAIT 100000 TOKEN gone-token\r\n")
	waitFor(t, "the round's SETs to be on their way", func() bool { return held.Load() == 3 })
	c.Close()
	waitFor(t, "the round to win on a majority", func() bool { return backendsHolding(t, e, "gone-token") >= 2 })
	waitFor(t, "the won lock to be released", func() bool { return backendsHolding(t, e, "gone-token") == 0 })
}

// backendsHolding counts the backends where k is token, read directly.
func backendsHolding(t *testing.T, e *faults.Env, token string) int {
	t.Helper()
	n := 0
	for _, b := range e.Backends {
		v, err := b.Client().Get(ctxT(t, 2*time.Second), "k").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if v == token {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
