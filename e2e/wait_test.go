package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

const (
	// slowJitter is the retry pause of the waiting proxies: a waiter that
	// gets the lock within wakeBound of the release was woken.
	slowJitter = 10 * time.Second
	wakeBound  = 5 * time.Second
)

func slowRetries(c *quorum.Config) { c.RetryDelayMin, c.RetryDelayMax = slowJitter, slowJitter }

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

// lockWaiting sends LOCK … WAIT through a client like c and returns once
// the waiter is in its pause: its proxy counted both of its refused rounds
// (the plain one and the one that marks the key). From then on only a
// release notice or its retry pause (slowJitter) ends the pause.
func lockWaiting(t *testing.T, c *redis.Client, key string) <-chan lockReply {
	t.Helper()
	w := blockingClient(t, c)
	info := redis.NewClient(&redis.Options{Addr: c.Options().Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { info.Close() })
	before := contendedRounds(t, info)
	ch := make(chan lockReply, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*slowJitter)
		defer cancel()
		res, err := w.Do(ctx, "LOCK", key, 60000, "WAIT", 3*slowJitter.Milliseconds()).Slice()
		ch <- lockReply{res, err, time.Now()}
	}()
	pollFor(t, "the waiter's first two rounds", func() bool { return contendedRounds(t, info) >= before+2 })
	return ch
}

// blockingClient is a client like c for one blocking command: it waits for
// the reply as long as the command's ctx allows and never sends a command
// twice. go-redis's defaults would hang up after a few seconds and send
// the LOCK again, and the second LOCK, a new one, finds the key free
// without any wake.
func blockingClient(t *testing.T, c *redis.Client) *redis.Client {
	t.Helper()
	o := *c.Options()
	o.ReadTimeout, o.MaxRetries, o.ContextTimeoutEnabled = -1, -1, true
	w := redis.NewClient(&o)
	t.Cleanup(func() { w.Close() })
	return w
}

// contendedRounds is the proxy's count of acquire rounds refused because
// the key was held, as INFO locks shows it.
func contendedRounds(t *testing.T, c *redis.Client) int {
	t.Helper()
	text, err := c.Info(ctxT(t), "locks").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, v, ok := strings.Cut(text, "quorum_acquire_contended:")
	if !ok {
		t.Fatalf("INFO locks has no quorum_acquire_contended: %q", text)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(v, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("quorum_acquire_contended: %v", err)
	}
	return n
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
				res := lockWaiting(t, p.in.Client(t, 2), key)
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
// do), so a waiter gets an expired lock at its next retry, not when the
// lock expires. Its retry pause is 5s and the lock expires a moment into
// it: a grant within half the pause of the expiry would be a wake.
func TestWaitAcquiresAfterExpiry(t *testing.T) {
	const pause = 5 * time.Second
	in := redlocktest.Start(t, redlocktest.Options{Quorum: func(c *quorum.Config) {
		c.RetryDelayMin, c.RetryDelayMax = pause, pause
	}})
	c := in.Client(t, 2)
	lock(t, c, "exp", 300)
	res := lockWaiting(t, c, "exp")
	pollFor(t, "the lock expired on every backend", func() bool {
		return redlocktest.Count(in.BackendValues(t, "exp"), "<nil>") == len(in.Backends)
	})
	gone := time.Now()
	r := waitReply(t, res)
	if d := r.at.Sub(gone); d < pause/2 {
		t.Fatalf("the waiter got the lock %v after it expired; its retry pause is %v, so the expiry woke it", d, pause)
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

// olderThanARestart waits until every backend has been up long enough
// that a backend restarted from now on started later than the others by
// more than the auto quarantine's tolerance, as their uptimes tell (whole
// seconds). Only then do the others count as witnesses of what the
// restarted one granted, whatever order the proxy's first looks came in.
func olderThanARestart(t *testing.T, in *redlocktest.Instance) {
	t.Helper()
	const upFor = 4 // youngTolerance (2s) plus a second of rounding each side
	for _, s := range in.Backends {
		rc := s.Client()
		pollFor(t, "backend "+s.Addr()+" up for "+strconv.Itoa(upFor)+"s", func() bool {
			text, err := rc.Info(ctxT(t), "server").Result()
			if err != nil {
				return false
			}
			_, after, ok := strings.Cut(text, "uptime_in_seconds:")
			if !ok {
				return false
			}
			up, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\r\n", 2)[0]))
			return err == nil && up >= upFor
		})
	}
}
