package embedded

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// TestMemoryReportsChanges: the in-memory node reports the keys its
// commands changed (not those they only read or left as they were) and
// the keys that expired, without a read touching them, after a nil that
// says its reports have begun.
func TestMemoryReportsChanges(t *testing.T) {
	m := New("m")
	t.Cleanup(func() { m.Close() })
	ch := nodetest.WatchInvalidated(m)
	call := func(cmd quorum.Cmd) quorum.Reply {
		t.Helper()
		return quorum.Call(context.Background(), m, cmd)
	}
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "a", Token: "t", TTL: time.Minute})
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "a", Token: "u", TTL: time.Minute}) // refused: no change
	call(quorum.Cmd{Kind: quorum.Get, Key: "a"})
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "b", Token: "t", TTL: 150 * time.Millisecond, DB: 2})
	var got []string
	for len(got) < 4 {
		select {
		case k := <-ch:
			got = append(got, k)
		case <-time.After(20 * time.Second):
			t.Fatalf("reports so far %q, want the start, a, b and b's expiry", got)
		}
	}
	if want := "[* a b b]"; fmt.Sprint(got) != want {
		t.Fatalf("reports %q, want %s", got, want)
	}
}

// TestMemoryReportsEveryExpiry: a key that expired is reported whoever
// comes upon it, as a Redis server reports it: a read that finds it
// expired, and the expiry loop, which drops expired hashes (the lock
// kinds' keys) as well as strings.
func TestMemoryReportsEveryExpiry(t *testing.T) {
	m := New("m")
	var mu sync.Mutex
	clock := time.Now()
	m.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	t.Cleanup(func() { m.Close() })
	ch := nodetest.WatchInvalidated(m)
	call := func(cmd quorum.Cmd) {
		t.Helper()
		if rep := quorum.Call(context.Background(), m, cmd); rep.Err != nil {
			t.Fatal(rep.Err)
		}
	}
	next := func() string {
		t.Helper()
		select {
		case k := <-ch:
			return k
		case <-time.After(20 * time.Second):
			t.Fatal("no report")
			return ""
		}
	}
	call(quorum.Cmd{Kind: quorum.SetNX, Key: "s", Token: "t", TTL: time.Second})
	call(quorum.Cmd{Kind: quorum.Eval, Keys: []string{"h"}, Mark: "redlockd:mark:1", TTL: time.Minute,
		Script: nodetest.Script(`redis.call('hset', KEYS[1], 'f', 'v') redis.call('pexpire', KEYS[1], 1000) return 1`)})
	for _, want := range []string{"*", "s", "h"} {
		if got := next(); got != want {
			t.Fatalf("report %q, want %q", got, want)
		}
	}
	mu.Lock()
	clock = clock.Add(2 * time.Second)
	mu.Unlock()
	call(quorum.Cmd{Kind: quorum.Get, Key: "s"}) // finds s expired
	got := map[string]bool{}
	for len(got) < 2 {
		got[next()] = true
	}
	if !got["s"] || !got["h"] {
		t.Fatalf("reports %v after both expired, want s and h", got)
	}
}
