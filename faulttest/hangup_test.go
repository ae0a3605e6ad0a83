package faulttest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/faults"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestHangUpDuringRound: a client hangs up while its LOCK … WAIT has an
// acquire round in flight (its SETs held by the fault proxies). Node calls
// outlive the cancellation, so the round wins; the proxy then releases what
// it won instead of leaving the lock to live its ttl with no holder.
func TestHangUpDuringRound(t *testing.T) {
	const token = "gone-token"
	e := hangUpMidRound(t, "LOCK k 60000 WAIT 100000 TOKEN "+token, token)
	waitFor(t, "the round to win on a majority", func() bool { return backendsHolding(t, e, token) >= 2 })
	waitFor(t, "the won lock to be released", func() bool { return backendsHolding(t, e, token) == 0 })
}

// TestHangUpDuringOwnerRound is TestHangUpDuringRound for LOCK … OWNER:
// the hold that the round wins after the client hung up is taken back, so
// the owner's lock does not live its ttl with no holder.
func TestHangUpDuringOwnerRound(t *testing.T) {
	const prefix = "owner:4:gone:"
	e := hangUpMidRound(t, "LOCK k 60000 WAIT 100000 OWNER gone", prefix)
	waitFor(t, "the round to win on a majority", func() bool { return backendsHolding(t, e, prefix) >= 2 })
	waitFor(t, "the won hold to be taken back", func() bool { return backendsHolding(t, e, prefix) == 0 })
}

// hangUpMidRound sends the inline command cmd through a proxy whose three
// backends are each behind a fault proxy with a 500ms delay, waits until
// every backend's request carrying marker is on its way, and hangs up. The
// fault proxies hold those requests until the client has hung up, so the
// round cannot have been answered before that, however late this test's
// own goroutine runs on a loaded machine.
func hangUpMidRound(t *testing.T, cmd, marker string) *faults.Env {
	t.Helper()
	const delay = 500 * time.Millisecond
	e := faults.Start(t, 3)
	in := redlocktest.StartOverAddrs(t, e.Addrs(), redlocktest.Options{NodeTimeout: 10 * delay})
	var held atomic.Int32 // fault proxies holding the round's request
	hungUp := make(chan struct{})
	for _, b := range e.Backends {
		var once atomic.Bool
		b.Proxy.OnRequest(func(chunk []byte) {
			if bytes.Contains(chunk, []byte(marker)) && once.CompareAndSwap(false, true) {
				held.Add(1)
				// Holds this connection's pump, bounded, until the hang-up.
				select {
				case <-hungUp:
				case <-time.After(10 * time.Second):
				}
			}
		})
		b.Proxy.SetDelay(delay)
	}
	c, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "%s\r\n", cmd)
	waitFor(t, "the round's requests to be on their way", func() bool { return held.Load() == 3 })
	c.Close()
	close(hungUp)
	return e
}

// backendsHolding counts the backends where k is a token that starts with
// prefix (a whole token is its own prefix), read directly.
func backendsHolding(t *testing.T, e *faults.Env, prefix string) int {
	t.Helper()
	n := 0
	for _, b := range e.Backends {
		v, err := b.Client().Get(ctxT(t, 2*time.Second), "k").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if v != "" && strings.HasPrefix(v, prefix) {
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

// TestHangUpDuringTryLockKeepsItsLock: a command that does not wait runs
// to its end when its client hangs up, as Redis runs a command it has
// read: a SET … NX or a LOCK … FENCE without WAIT whose client left in
// its acquire round keeps the lock it won, until its ttl (the client
// chose the token and may release it). Only a LOCK … WAIT is watched for
// a hang-up and takes nothing (TestHangUpDuringRound).
func TestHangUpDuringTryLockKeepsItsLock(t *testing.T) {
	for _, tc := range []struct{ cmd, token string }{
		{"SET k kept-set NX PX 60000", "kept-set"},
		{"LOCK k 60000 FENCE TOKEN kept-fence", "kept-fence"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			e := hangUpMidRound(t, tc.cmd, tc.token)
			waitFor(t, "the round to win on a majority", func() bool { return backendsHolding(t, e, tc.token) >= 2 })
			// A release would follow the last round at once (the fence
			// round takes one more round trip, 500 ms here); give it
			// several times that to show up.
			time.Sleep(3 * time.Second)
			if n := backendsHolding(t, e, tc.token); n < 2 {
				t.Fatalf("%s: the lock is on %d backends after its client hung up, want it kept on a majority", tc.cmd, n)
			}
		})
	}
}
