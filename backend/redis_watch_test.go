package backend

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/quorum"
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
			r.WatchServer(func(in quorum.ServerInfo) {
				select {
				case looks <- in:
				default:
				}
			})
			r.WatchReleases(func(string) {})
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
			r.WatchServer(func(quorum.ServerInfo) { t.Error("a look after Close") })
			r.WatchReleases(func(string) { t.Error("a release after Close") })
			goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
		})
	}
}
