package compat

import (
	"strings"
	"sync"
	"testing"
)

// blockOn returns a command that blocks on a client of tg until release is
// called, and release: on redis-server a BLPOP of an empty list, ended by
// an RPUSH; on redlockd a LOCK … WAIT of a lock that b holds, ended by
// b's UNLOCK. Both wait far longer than the test runs.
func blockOn(t *testing.T, tg target, b *wireConn, name string) (wait []string, release func()) {
	t.Helper()
	if tg.name != redlockdTarget {
		return []string{"BLPOP", name, "60"}, func() {
			if v := b.do("RPUSH", name, "x"); v != ":1" {
				t.Fatalf("RPUSH %s = %s", name, v)
			}
		}
	}
	held := b.do("LOCK", name, "60000")
	token, ok := strings.CutPrefix(held, "*[")
	if !ok {
		t.Fatalf("LOCK %s = %s", name, held)
	}
	token, _, _ = strings.Cut(token, " ")
	return []string{"LOCK", name, "60000", "WAIT", "60000"}, func() {
		if v := b.do("UNLOCK", name, token); v != ":1" {
			t.Fatalf("UNLOCK %s = %s", name, v)
		}
	}
}

// trackingClient dials addr, speaks RESP3 and turns tracking on with opts.
func trackingClient(t *testing.T, addr string, opts ...string) *wireConn {
	t.Helper()
	c := dialWire(t, addr)
	if v := c.do("HELLO", "3"); !strings.HasPrefix(v, "%[") {
		t.Fatalf("HELLO 3 = %s", v)
	}
	if v := c.do(append([]string{"CLIENT", "TRACKING", "ON"}, opts...)...); v != "+OK" {
		t.Fatalf("CLIENT TRACKING ON %v = %s", opts, v)
	}
	return c
}

// TestTrackingReplyBeforeBlockedBatch: a client that tracks sends, in one
// write, a read of k and then a command that blocks. Redis answers the
// read at once, before the wait; when k changes during the wait, the
// client is told after the read's reply, and the blocked command's reply
// comes last. rueidis relies on that order: an invalidation that reaches
// it before the reply of the read it invalidates is dropped (the read is
// still pending), and the value read is cached with nothing to
// invalidate it. redlockd once held the read's reply until the wait
// ended and wrote the invalidation at once.
func TestTrackingReplyBeforeBlockedBatch(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		ctx := testCtx(t)
		// The backends' reports have begun: no flush comes later.
		warmTracking(t, ctx, tg.addr, tg.other, len(tg.backends))
		a := trackingClient(t, tg.addr)
		b := dialWire(t, tg.other)
		wait, release := blockOn(t, tg, b, "order:x")
		if v := b.do("SET", "order:k", "v1", "PX", "60000"); v != "+OK" {
			t.Fatalf("SET = %s", v)
		}
		a.send([]string{"GET", "order:k"}, wait)
		// The read's reply comes while the other command waits.
		if v := a.read(); v != "v1" {
			t.Fatalf("first value read = %s, want the GET's reply v1", v)
		}
		if v := b.do("DEL", "order:k"); v != ":1" {
			t.Fatalf("DEL = %s", v)
		}
		// The invalidation comes while the other command still waits.
		if v := a.read(); !isInvalidation(v, "order:k") {
			t.Fatalf("value read after the DEL = %s, want the invalidation of order:k", v)
		}
		release()
		if v := a.read(); !strings.HasPrefix(v, "*[") {
			t.Fatalf("the blocked command's reply = %s, want an array", v)
		}
		// Redis told the client once (the key is forgotten once told);
		// redlockd may tell it once per backend. The next reply is the
		// PING's, after any copies.
		a.send([]string{"PING"})
		for _, v := range a.readUntil(func(v string) bool { return !strings.HasPrefix(v, ">") }) {
			if strings.HasPrefix(v, ">") && !isInvalidation(v, "order:k") {
				t.Errorf("unexpected push %s", v)
			}
		}
	})
}

// TestTrackingPushAfterEarlyRead: redlockd runs a read pipelined behind a
// LOCK … WAIT during the wait (Redis runs it after), so the read may
// answer with a value that changes during the wait; its reply must then
// come before the invalidation of that change, though both wait for the
// LOCK's reply. The test lets every backend answer the read before the
// change, and the proxy hear every backend's report of the change,
// before it ends the wait.
func TestTrackingPushAfterEarlyRead(t *testing.T) {
	in := startRedlockd(t)
	second := startSecond(t, in)
	tg := target{name: redlockdTarget, addr: in.Addr, other: second.Addr, backends: in.Backends}
	ctx := testCtx(t)
	warmTracking(t, ctx, tg.addr, tg.other, len(tg.backends))
	a := trackingClient(t, tg.addr)
	b := dialWire(t, tg.other)
	// seen hears every backend's reports of order:k through a's proxy.
	seen := trackingClient(t, tg.addr, "BCAST", "PREFIX", "order:k")
	reported := func() {
		t.Helper()
		for range tg.backends {
			seen.readUntil(func(v string) bool { return isInvalidation(v, "order:k") })
		}
	}
	wait, release := blockOn(t, tg, b, "order:x")
	if v := b.do("SET", "order:k", "v1", "PX", "60000"); v != "+OK" {
		t.Fatalf("SET = %s", v)
	}
	reported()
	// Each backend's MONITOR shows when it has answered the read.
	var monitors []*wireConn
	for _, s := range tg.backends {
		m := dialWire(t, s.Addr())
		if v := m.do("MONITOR"); v != "+OK" {
			t.Fatalf("MONITOR = %s", v)
		}
		monitors = append(monitors, m)
	}
	a.send(wait, []string{"GET", "order:k"})
	var wg sync.WaitGroup
	for i, m := range monitors {
		wg.Go(func() {
			if _, err := m.until(func(v string) bool { return strings.Contains(strings.ToLower(v), `"get" "order:k"`) }); err != nil {
				t.Errorf("backend %d never answered the GET: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if v := b.do("DEL", "order:k"); v != ":1" {
		t.Fatalf("DEL = %s", v)
	}
	reported()
	release()
	got := a.readUntil(func(v string) bool { return isInvalidation(v, "order:k") })
	if len(got) != 3 || !strings.HasPrefix(got[0], "*[") || got[1] != "v1" {
		t.Fatalf("a read %q; want the LOCK's reply, the GET's reply v1, then the invalidation of order:k", got)
	}
}
