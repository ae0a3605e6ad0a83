package faulttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

// long reports whether the long versions were asked for.
func long() bool { return os.Getenv("REDLOCKD_LONG") == "1" }

// runFor is how long a contention scenario runs.
func runFor() time.Duration {
	if long() {
		return 20 * time.Second
	}
	return 1500 * time.Millisecond
}

// load describes a contention workload.
type load struct {
	clusters []*quorum.Cluster // clients are spread over them
	clients  int
	keys     int
	ttl      time.Duration
	dur      time.Duration
	// during, when set, runs once the clients are going, on the test's
	// goroutine (the fault to inject); the clients stop when dur has
	// passed and during has returned.
	during func()
}

// contend runs the workload and returns its history's verdict.
func contend(t *testing.T, l load) check.Result {
	t.Helper()
	rec := check.NewRecorder()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := l.clusters[i%len(l.clusters)]
			client(c, rec, fmt.Sprintf("c%d", i), l, stop, i)
		}()
	}
	deadline := time.NewTimer(l.dur)
	if l.during != nil {
		l.during()
	}
	<-deadline.C
	close(stop)
	wg.Wait()
	return rec.Check()
}

// client loops acquire → increment → release until stop. The loop is
// bounded by stop, which the caller always closes.
func client(c *quorum.Cluster, rec *check.Recorder, name string, l load, stop <-chan struct{}, seed int) {
	ctx := context.Background()
	for n := seed; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("lock:%d", n%l.keys)
		t0 := time.Now()
		lk, err := c.Acquire(ctx, key, quorum.NewToken(), l.ttl)
		got := time.Now()
		rec.Attempt(t0, got, err == nil, errClass(err))
		if err != nil {
			continue
		}
		h := rec.Begin(name, key, t0, got, lk.Validity)
		h.Increment(50 * time.Microsecond)
		h.End()
		_, _ = c.Release(ctx, key, lk.Token)
	}
}

func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, quorum.ErrNotAcquired):
		return "contended"
	case errors.Is(err, quorum.ErrNoQuorum):
		return "noquorum"
	default:
		return "other"
	}
}

// report logs the scenario's figures in the one-line form the README
// quotes, and fails the test on any violation.
func report(t *testing.T, res check.Result) {
	t.Helper()
	line := fmt.Sprintf("SCENARIO %-28s %v", t.Name(), res)
	t.Log(line)
	if long() {
		fmt.Println(line)
	}
	if !res.OK() {
		for i, o := range res.Overlaps {
			if i == 10 {
				break
			}
			t.Errorf("overlap: %v", o)
		}
		t.Fatalf("mutual exclusion violated: %v", res)
	}
	if res.Acquired == 0 {
		t.Fatalf("no lock was ever acquired: %v", res)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond (an external condition) until it holds or the
// deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func defaultCfg() quorum.Config {
	cfg := quorum.DefaultConfig()
	// Loaded CI machines stall goroutines for tens of milliseconds; the
	// tests that need the default say so.
	cfg.NodeTimeout = 200 * time.Millisecond
	return cfg
}
