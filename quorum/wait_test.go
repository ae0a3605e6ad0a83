package quorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
)

// signalRefused makes node f send on a channel each time it refuses token's
// SetNX (without blocking: the channel is buffered and extra signals drop).
func signalRefused(f *faultnode.Node, token string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	f.OnReply(func(cmd quorum.Cmd, rep quorum.Reply) {
		if cmd.Kind == quorum.SetNX && cmd.Token == token && !rep.OK {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	return ch
}

type waitResult struct {
	l   quorum.Lock
	err error
}

func acquireWaitAsync(c *quorum.Cluster, ctx context.Context, wait time.Duration) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		l, err := c.Acquire(ctx, key, mine, ttl, quorum.Wait(wait))
		ch <- waitResult{l, err}
	}()
	return ch
}

func recvResult(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("AcquireWait did not return")
		return waitResult{}
	}
}

func TestAcquireWaitSucceedsAfterRelease(t *testing.T) {
	fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
	refused := signalRefused(fs[0], mine)
	c := newCluster(t, nodes, testConfig())
	res := acquireWaitAsync(c, context.Background(), time.Minute)

	select {
	case <-refused: // the waiter lost at least one round to the holder
	case <-time.After(5 * time.Second):
		t.Fatal("waiter never tried")
	}
	if ok, err := c.Release(context.Background(), key, other); !ok || err != nil {
		t.Fatalf("holder's Release = %v, %v", ok, err)
	}
	r := recvResult(t, res)
	if r.err != nil || r.l.Token != mine || r.l.Validity <= 0 {
		t.Fatalf("AcquireWait = %+v, %v; want the lock", r.l, r.err)
	}
	if h := holders(t, fs, key, mine); len(h) < 2 {
		t.Errorf("holders = %v, want a majority", h)
	}
}

func TestAcquireWaitFreeFirstRound(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	l, err := c.Acquire(context.Background(), key, mine, ttl, quorum.Wait(time.Minute))
	if err != nil || l.Token != mine {
		t.Fatalf("AcquireWait = %+v, %v", l, err)
	}
	waitAll(t, fs, opSetNX, 1)
	for _, f := range fs {
		if n := f.Calls(opSetNX); n != 1 {
			t.Errorf("%s: %d rounds for a free lock, want 1", f.Name(), n)
		}
	}
}

// TestAcquireWaitGivesUp uses a fake clock for the wait budget (each reading
// advances 1ms), so the number of rounds does not depend on the scheduler.
func TestAcquireWaitGivesUp(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []nodeSetup
		wait      time.Duration
		wantErr   error
		minRounds int
		maxRounds int
	}{
		{"contention", []nodeSetup{otherN, otherN, otherN}, 30 * time.Millisecond, quorum.ErrNotAcquired, 2, 30},
		{"no quorum is retried", []nodeSetup{okN, errN, errN}, 30 * time.Millisecond, quorum.ErrNoQuorum, 2, 30},
		{"zero wait is one round", []nodeSetup{otherN, otherN, otherN}, 0, quorum.ErrNotAcquired, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, nodes := setupNodes(t, tt.nodes)
			cfg := testConfig()
			cfg.Now = newStepClock(time.Millisecond).Now
			c := newCluster(t, nodes, cfg)
			res := acquireWaitAsync(c, context.Background(), tt.wait)
			r := recvResult(t, res)
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("AcquireWait = %+v, %v; want %v", r.l, r.err, tt.wantErr)
			}
			if r.l != (quorum.Lock{}) {
				t.Errorf("failed AcquireWait returned %+v", r.l)
			}
			rounds := fs[0].Calls(opSetNX)
			if rounds < tt.minRounds || rounds > tt.maxRounds {
				t.Errorf("%d rounds, want %d..%d", rounds, tt.minRounds, tt.maxRounds)
			}
			assertNowhere(t, fs, key, mine)
		})
	}
}

func TestAcquireWaitStopsOnCancel(t *testing.T) {
	fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
	refused := signalRefused(fs[0], mine)
	cfg := testConfig()
	// Long pauses: the cancellation must cut the pause short.
	cfg.RetryDelayMin, cfg.RetryDelayMax = time.Hour, time.Hour
	c := newCluster(t, nodes, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := acquireWaitAsync(c, ctx, 10*time.Hour)
	select {
	case <-refused:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter never tried")
	}
	cancel()
	r := recvResult(t, res)
	if r.err == nil {
		t.Fatalf("AcquireWait after cancel = %+v, want an error", r.l)
	}
	if !errors.Is(r.err, quorum.ErrNotAcquired) && !errors.Is(r.err, context.Canceled) {
		t.Errorf("AcquireWait after cancel = %v, want ErrNotAcquired or context.Canceled", r.err)
	}
	assertNowhere(t, fs, key, mine)
}

func TestAcquireWaitCancelledBefore(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Acquire(ctx, key, mine, ttl, quorum.Wait(time.Hour))
	if err == nil {
		t.Fatal("AcquireWait with a cancelled ctx succeeded")
	}
	if n := fs[0].Calls(opSetNX); n > 1 {
		t.Errorf("%d rounds with a cancelled ctx, want at most 1", n)
	}
}

func TestAcquireWaitInvalidTTL(t *testing.T) {
	fs, nodes := newNodes(3)
	c := newCluster(t, nodes, testConfig())
	if _, err := c.Acquire(context.Background(), key, mine, 0, quorum.Wait(time.Hour)); !errors.Is(err, quorum.ErrInvalidTTL) {
		t.Fatalf("AcquireWait(ttl 0) = %v, want ErrInvalidTTL", err)
	}
	if n := fs[0].Calls(opSetNX); n != 0 {
		t.Errorf("%d SetNX calls for an invalid ttl", n)
	}
}

// TestAcquireWaitPausesBetweenRounds checks that consecutive rounds are at
// least RetryDelayMin apart, after the first marked round (a lower bound that a timer guarantees, so not a
// flaky timing assertion). The wait budget runs on a fake clock.
func TestAcquireWaitPausesBetweenRounds(t *testing.T) {
	const pause = 10 * time.Millisecond
	fs, nodes := setupNodes(t, []nodeSetup{otherN, otherN, otherN})
	var mu sync.Mutex
	var starts []time.Time
	fs[0].OnReply(func(cmd quorum.Cmd, _ quorum.Reply) {
		if cmd.Kind == quorum.SetNX && cmd.Token == mine {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
		}
	})
	cfg := testConfig()
	cfg.RetryDelayMin, cfg.RetryDelayMax = pause, pause
	cfg.Now = newStepClock(time.Millisecond).Now
	c := newCluster(t, nodes, cfg)
	if _, err := c.Acquire(context.Background(), key, mine, ttl, quorum.Wait(40*time.Millisecond)); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("AcquireWait = %v, want ErrNotAcquired", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) < 3 {
		t.Fatalf("%d rounds, want several", len(starts))
	}
	// The second round, the first that marks the key, runs at once.
	for i := 2; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < pause {
			t.Errorf("round %d came %v after the previous one, want >= %v", i, gap, pause)
		}
	}
}
