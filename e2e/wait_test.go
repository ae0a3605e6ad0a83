package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/internal/redistest"
	"github.com/redlockd/redlockd/internal/redlocktest"
	"github.com/redlockd/redlockd/quorum"
)

const (
	// slowJitter is the retry pause of the waiting proxies: a waiter that
	// gets the lock within wakeBound of the release was woken.
	slowJitter = 10 * time.Second
	wakeBound  = 5 * time.Second
)

func slowRetries(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = slowJitter, slowJitter }

// setCalls is how many SET commands a backend has run.
func setCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	text, err := s.Client().Info(ctxT(t), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, v, _ := strings.Cut(text, "cmdstat_set:calls=")
	n, _ := strconv.Atoi(strings.SplitN(v, ",", 2)[0])
	return n
}

func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type lockReply struct {
	res []any
	err error
	at  time.Time
}

// lockWaiting sends LOCK … WAIT through c and returns once the waiter's
// first round has reached every backend (and been refused there).
func lockWaiting(t *testing.T, c *redis.Client, backends []*redistest.Server, key string) <-chan lockReply {
	t.Helper()
	before := make([]int, len(backends))
	for i, s := range backends {
		before[i] = setCalls(t, s)
	}
	ch := make(chan lockReply, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*slowJitter)
		defer cancel()
		res, err := c.Do(ctx, "LOCK", key, 60000, "WAIT", 3*slowJitter.Milliseconds()).Slice()
		ch <- lockReply{res, err, time.Now()}
	}()
	for i, s := range backends {
		pollFor(t, "the waiter's first round", func() bool { return setCalls(t, s) > before[i] })
	}
	return ch
}

func TestWaitWokenByRelease(t *testing.T) {
	backends := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	second := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	holder := first.Client(t, 2)
	releases := []struct {
		name    string
		release func(key, tok string) error
	}{
		{"UNLOCK", func(key, tok string) error { return holder.Do(ctxT(t), "UNLOCK", key, tok).Err() }},
		{"DEL", func(key, _ string) error { return holder.Do(ctxT(t), "DEL", key).Err() }},
		{"EVAL compare-and-delete", func(key, tok string) error {
			return holder.Eval(ctxT(t), `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, []string{key}, tok).Err()
		}},
	}
	proxies := []struct {
		name string
		in   *redlocktest.Instance
	}{{"same proxy", first}, {"second proxy", second}}
	for _, rel := range releases {
		for _, p := range proxies {
			t.Run(rel.name+"/"+p.name, func(t *testing.T) {
				key := "wait:" + rel.name + ":" + p.name
				tok, _ := lock(t, holder, key, 60000)
				res := lockWaiting(t, p.in.Client(t, 2), backends, key)
				released := time.Now()
				if err := rel.release(key, tok); err != nil {
					t.Fatal(err)
				}
				var r lockReply
				select {
				case r = <-res:
				case <-time.After(4 * slowJitter):
					t.Fatal("LOCK WAIT did not return")
				}
				if r.err != nil || len(r.res) != 2 {
					t.Fatalf("LOCK WAIT = %v, %v; want the lock", r.res, r.err)
				}
				if d := r.at.Sub(released); d > wakeBound {
					t.Errorf("waiter got the lock %v after the release; its retry jitter is %v, so it was not woken", d, slowJitter)
				}
			})
		}
	}
}

// TestWaitAcquiresAfterExpiry: expiry announces nothing (only releases
// do), so a waiter gets an expired lock at its next jittered retry.
func TestWaitAcquiresAfterExpiry(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Quorum: func(c *quorum.Config) {
		c.RetryDelayMin, c.RetryDelayMax = 50*time.Millisecond, 100*time.Millisecond
	}})
	c := in.Client(t, 2)
	lock(t, c, "exp", 100)
	res, err := c.Do(ctxT(t), "LOCK", "exp", 5000, "WAIT", 5000).Slice()
	if err != nil || len(res) != 2 {
		t.Fatalf("LOCK WAIT behind an expiring lock = %v, %v", res, err)
	}
}

// TestInfoBackendsShowsQuarantine: a backend that restarted is shown as
// quarantined, with its new run_id, and its votes do not count.
func TestInfoBackendsShowsQuarantine(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{Quorum: func(c *quorum.Config) { c.RestartQuarantine = time.Minute }})
	c := in.Client(t, 2)
	info := func() string {
		s, err := c.Info(ctxT(t), "backends").Result()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	upWithRunID := regexp.MustCompile(`state=up,run_id=[0-9a-f]{40},`)
	pollFor(t, "three backends up", func() bool { return len(upWithRunID.FindAllString(info(), -1)) == 3 })
	in.Backends[0].Restart(t)
	pollFor(t, "the restarted backend quarantined", func() bool {
		return strings.Contains(info(), "backend0:addr="+in.Backends[0].Addr()+",state=quarantined,run_id=")
	})
	in.Backends[1].Kill() // the lock would need the quarantined backend's vote
	_, err := c.Do(ctxT(t), "LOCK", "q", 5000).Result()
	if err == nil || !strings.Contains(err.Error(), "NOQUORUM") || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("LOCK with one backend quarantined and one down = %v, want NOQUORUM naming the quarantine", err)
	}
}
