package backend

import (
	"github.com/redlockd/redlockd/testkit/nodetest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/leaktest"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// TestRedisWatchStopsOnClose: the subscription and the server look end
// with Close, also while they are backing off from a server that is down.
func TestRedisWatchStopsOnClose(t *testing.T) {
	for _, down := range []bool{false, true} {
		name := map[bool]string{false: "server up", true: "server down"}[down]
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			before := goleak.IgnoreCurrent() // the server's own reaper included
			r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			looks := make(chan quorum.ServerInfo, 64)
			nodetest.WatchServer(r, func(in quorum.ServerInfo) {
				select {
				case looks <- in:
				default:
				}
			})
			nodetest.WatchReleases(r, func(string) {})
			waitSubscribed(t, []*redistest.Server{srv}, 1)
			if down {
				srv.Kill()
				poll(t, "a failed look", func() bool { return (<-looks).Err != nil })
			}
			closed := make(chan struct{})
			go func() { _ = r.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(pollBound):
				t.Fatal("Close did not return")
			}
			nodetest.WatchServer(r, func(quorum.ServerInfo) { t.Error("a look after Close") })
			nodetest.WatchReleases(r, func(string) { t.Error("a release after Close") })
			goleak.VerifyNone(t, leaktest.Options(before)...)
		})
	}
}

// TestRedisLookBeforeFirstCommand: after a restart, the new run_id is
// reported before the first command on a new connection returns, on both
// client paths, with the periodic look too slow to explain it.
func TestRedisLookBeforeFirstCommand(t *testing.T) {
	paths := []struct {
		name string
		call func(r *Redis) error
	}{
		{"lock commands", func(r *Redis) error {
			_, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute)
			return err
		}},
		{"other commands", func(r *Redis) error {
			_, err := r.watch.info(t.Context(), "info", "server")
			return err
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			r, err := NewRedis(srv.Addr(), RedisOptions{HealthInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			var mu sync.Mutex
			var last string
			nodetest.WatchServer(r, func(in quorum.ServerInfo) {
				if in.Err == nil {
					mu.Lock()
					last = in.RunID
					mu.Unlock()
				}
			})
			seen := func() string { mu.Lock(); defer mu.Unlock(); return last }
			poll(t, "the first look", func() bool { return seen() != "" })
			if err := p.call(r); err != nil {
				t.Fatal(err)
			}
			old := seen()
			srv.Restart(t)
			// The first call may meet a connection the restart broke; the
			// first one that succeeds ran on a new connection.
			poll(t, "a call after the restart", func() bool { return p.call(r) == nil })
			if got := seen(); got == old {
				t.Fatalf("a call succeeded on the restarted server before its new run_id was reported (still %s)", got)
			}
		})
	}
}
