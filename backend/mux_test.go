package backend

import (
	"context"
	"errors"
	"fmt"
	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/redistest"
)

// connectionsReceived reads the server's count of accepted connections.
func connectionsReceived(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	text, err := srv.Client().Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := infoField(text, "total_connections_received")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("total_connections_received %q: %v", v, err)
	}
	return n
}

// Many concurrent callers share the node's few connections, and each gets
// its own reply.
func TestMuxConcurrentCallersShareConnections(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	before := connectionsReceived(t, srv)
	const callers, rounds = 50, 40
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range rounds {
				if err := lockRound(t.Context(), r, fmt.Sprintf("k%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The test's own INFO client accounts for one more.
	if got := connectionsReceived(t, srv) - before; got > defaultConns+1 {
		t.Fatalf("%d callers opened %d connections; want at most %d", callers, got, defaultConns+1)
	}
}

// lockRound takes, reads, extends and releases one lock, checking each answer.
func lockRound(ctx context.Context, r *Redis, key string) error {
	tok := "t-" + key
	if ok, err := nodetest.SetNX(ctx, r, key, tok, time.Minute); !ok || err != nil {
		return fmt.Errorf("SetNX %s = %v, %v", key, ok, err)
	}
	if got, _, ok, err := nodetest.Get(ctx, r, key); got != tok || !ok || err != nil {
		return fmt.Errorf("Get %s = %q, %v, %v", key, got, ok, err)
	}
	if ok, err := nodetest.CompareAndExtend(ctx, r, key, tok, time.Minute); !ok || err != nil {
		return fmt.Errorf("CompareAndExtend %s = %v, %v", key, ok, err)
	}
	if ok, err := nodetest.CompareAndDelete(ctx, r, key, tok, false); !ok || err != nil {
		return fmt.Errorf("CompareAndDelete %s = %v, %v", key, ok, err)
	}
	return nil
}

// Under a stall every operation fails by its own deadline: at it, or
// earlier when the connection it waits on is reset because a request ahead
// of it is overdue (nothing behind an unanswered request can be answered).
// After SIGCONT the node answers again on a fresh connection, and no late
// reply is mistaken for a later request's.
func TestMuxStallFailsEachAtItsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := lockRound(t.Context(), r, "warm"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	stopped := true
	defer func() {
		if stopped {
			srv.Cont()
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			// Different budgets: each must end with its own ctx.
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(10+5*i)*time.Millisecond)
			defer cancel()
			_, errs[i] = nodetest.SetNX(ctx, r, "stalled", "x", time.Minute)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, wire.ErrConnReset) {
			t.Errorf("op %d: err = %v; want a deadline or reset error", i, err)
		}
	}
	srv.Cont()
	stopped = false
	for i := range 10 {
		if err := lockRound(t.Context(), r, fmt.Sprintf("after%d", i)); err != nil {
			t.Fatalf("after SIGCONT: %v", err)
		}
	}
}

// A crashed and restarted server is reached again on a new connection.
func TestMuxReconnectsAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := lockRound(t.Context(), r, "before"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err := nodetest.SetNX(ctx, r, "down", "x", time.Minute)
	cancel()
	if err == nil {
		t.Fatal("SetNX on a dead server succeeded")
	}
	srv.Restart(t)
	// The connection that died with the old process may fail one call per
	// line; after that every call must work.
	for i := range defaultConns {
		_ = lockRound(t.Context(), r, fmt.Sprintf("probe%d", i))
	}
	for i := range 10 {
		if err := lockRound(t.Context(), r, fmt.Sprintf("after%d", i)); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	}
}

// A script the server has forgotten is loaded again through EVAL.
func TestMuxNoScriptFallback(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := srv.Client().ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := lockRound(t.Context(), r, "k"); err != nil {
		t.Fatal(err)
	}
	ok, err := srv.Client().ScriptExists(t.Context(), compareAndDeleteScript.sha).Result()
	if err != nil || !ok[0] {
		t.Fatalf("script not cached after fallback: %v, %v", ok, err)
	}
}

// A request whose caller gave up before it was written is never sent: a
// SET NX that timed out in the queue cannot land after the caller's release.
func TestMuxAbandonedRequestIsNotSent(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	// A caller gives up through its deadline: Do has no other way.
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Millisecond))
	defer cancel()
	if _, err := nodetest.SetNX(ctx, r, "k", "a", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if n, err := srv.Client().Exists(t.Context(), "k").Result(); err != nil || n != 0 {
		t.Fatalf("an abandoned SetNX reached the server (read: %v)", err)
	}
}

func TestMuxCloseFailsWaiters(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.Addr(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lockRound(t.Context(), r, "k"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := nodetest.SetNX(t.Context(), r, "k2", "a", time.Minute); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("SetNX after Close: %v", err)
	}
}
