package backend

import (
	"context"
	"errors"
	"fmt"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

const (
	wakeKey = "wake-key"
	// slowJitter is the retry pause of the waiters here: an acquisition
	// within wakeBound of the release can only be a wake-up.
	slowJitter = 10 * time.Second
	wakeBound  = 5 * time.Second
	// pollBound bounds polling for an external condition.
	pollBound = 10 * time.Second
)

// proxyOver builds one "proxy" (its own Redis nodes and Cluster) over the
// servers, closed by the test's cleanup.
func proxyOver(t *testing.T, servers []*redistest.Server, tune func(*quorum.Config)) *quorum.Cluster {
	t.Helper()
	nodes := make([]quorum.Node, len(servers))
	for i, s := range servers {
		r, err := NewRedis(s.Addr(), RedisOptions{HealthInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		nodes[i] = r
	}
	return clusterOf(t, nodes, tune)
}

func clusterOf(t *testing.T, nodes []quorum.Node, tune func(*quorum.Config)) *quorum.Cluster {
	t.Helper()
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = time.Second // loaded test machine; not what is measured
	cfg.RetryDelayMin, cfg.RetryDelayMax = slowJitter, slowJitter
	cfg.Logger = slog.New(slog.DiscardHandler)
	if tune != nil {
		tune(&cfg)
	}
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(pollBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// subscribers is the server's count of subscribers to the release channel.
func subscribers(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	res, err := s.Client().Do(t.Context(), "pubsub", "numsub", releaseChannel).Slice()
	if err != nil || len(res) != 2 {
		return -1
	}
	n, _ := res[1].(int64)
	return n
}

func waitSubscribed(t *testing.T, servers []*redistest.Server, n int64) {
	t.Helper()
	for _, s := range servers {
		poll(t, "release subscriptions on "+s.Addr(), func() bool { return subscribers(t, s) >= n })
	}
}

type waitOutcome struct {
	l   quorum.Lock
	err error
	at  time.Time
}

// waitBehindHolder starts a blocking acquire on c and returns once its
// marked round has been refused by every server (the holder has the lock)
// and left its mark there, so that only a wake-up or the slow jitter can
// start its next round.
func waitBehindHolder(t *testing.T, c *quorum.Cluster, servers []*redistest.Server, wait time.Duration) <-chan waitOutcome {
	t.Helper()
	// The holder's Acquire returned once a majority had answered; its SET
	// may still be on its way to the last server. A waiter whose round got
	// there first would take that server (and give it back), so its mark,
	// which is set only where the key is held, would never be set there.
	for _, s := range servers {
		poll(t, "the holder's lock on "+s.Addr(), func() bool { return held(t, s, wakeKey) })
	}
	ch := make(chan waitOutcome, 1)
	go func() {
		l, err := c.Acquire(context.Background(), wakeKey, "waiter", time.Minute, quorum.Wait(wait))
		ch <- waitOutcome{l, err, time.Now()}
	}()
	for _, s := range servers {
		poll(t, "the waiter's mark on "+s.Addr(), func() bool { return marked(t, s, wakeKey) })
	}
	return ch
}

// held reports whether key is set on s.
func held(t *testing.T, s *redistest.Server, key string) bool {
	t.Helper()
	n, err := s.Client().Exists(t.Context(), key).Result()
	return err == nil && n == 1
}

// marked reports whether a waiter's mark of key is on s.
func marked(t *testing.T, s *redistest.Server, key string) bool {
	t.Helper()
	n, err := s.Client().Exists(t.Context(), WaitKey(key)).Result()
	return err == nil && n == 1
}

func await(t *testing.T, ch <-chan waitOutcome) waitOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(slowJitter + pollBound):
		t.Fatal("AcquireWait did not return")
		return waitOutcome{}
	}
}

func TestRedisWaitWokenByRelease(t *testing.T) {
	servers := redistest.StartN(t, 3)
	for _, across := range []bool{false, true} {
		name := map[bool]string{false: "same proxy", true: "second proxy"}[across]
		t.Run(name, func(t *testing.T) {
			holder := proxyOver(t, servers, nil)
			waiters := holder
			if across {
				waiters = proxyOver(t, servers, nil)
			}
			waitSubscribed(t, servers, 1)
			if _, err := holder.Acquire(t.Context(), wakeKey, "holder", time.Minute); err != nil {
				t.Fatal(err)
			}
			res := waitBehindHolder(t, waiters, servers, 3*slowJitter)
			released := time.Now()
			if ok, err := holder.Release(t.Context(), wakeKey, "holder"); !ok || err != nil {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			o := await(t, res)
			if o.err != nil || o.l.Token != "waiter" {
				t.Fatalf("waiter got %+v, %v", o.l, o.err)
			}
			if d := o.at.Sub(released); d > wakeBound {
				t.Errorf("waiter acquired %v after the release; a wake-up takes far less than its %v jitter", d, slowJitter)
			}
			if _, err := waiters.Release(t.Context(), wakeKey, "waiter"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// notifyHidden drops the Notify of every command, as a node of an older
// build would: releases through it publish nothing.
type notifyHidden struct{ quorum.Node }

func (n notifyHidden) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	cmd.Notify = false
	n.Node.Do(deadline, cmd, r)
}

// TestRedisWaitNotWokenWithoutPublish is the negative control: with a
// holder whose releases publish nothing, a waiter on another proxy sits
// out its whole (short) wait.
func TestRedisWaitNotWokenWithoutPublish(t *testing.T) {
	servers := redistest.StartN(t, 3)
	plain := proxyOver(t, servers, nil)
	hidden := make([]quorum.Node, 0, len(servers))
	for _, n := range plain.Nodes() {
		hidden = append(hidden, notifyHidden{n})
	}
	holder := clusterOf(t, hidden, nil)
	waiters := proxyOver(t, servers, nil)
	waitSubscribed(t, servers, 1)
	if _, err := holder.Acquire(t.Context(), wakeKey, "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	// The wait must outlast the polls for its marks on a loaded machine:
	// a mark lives only as long as the wait left.
	res := waitBehindHolder(t, waiters, servers, 3*time.Second)
	if ok, err := holder.Release(t.Context(), wakeKey, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if o := await(t, res); !errors.Is(o.err, quorum.ErrNotAcquired) {
		t.Fatalf("unwoken waiter got %+v, %v; want ErrNotAcquired", o.l, o.err)
	}
}

// TestRedisReleaseSubscriptionSurvivesRestart: after its server restarts,
// a node subscribes again, and a release announced only there wakes a
// waiter.
func TestRedisReleaseSubscriptionSurvivesRestart(t *testing.T) {
	servers := redistest.StartN(t, 3)
	c := proxyOver(t, servers, nil)
	waitSubscribed(t, servers, 1)
	servers[0].Restart(t)
	waitSubscribed(t, servers[:1], 1)

	for _, s := range servers {
		if err := s.Client().Set(t.Context(), wakeKey, "holder", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res := waitBehindHolder(t, c, servers, 3*slowJitter)
	announced := time.Now()
	for _, s := range servers { // deleted behind the proxy's back: no announcement...
		if err := s.Client().Del(t.Context(), wakeKey).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// ...except this one, on the restarted server only.
	if err := servers[0].Client().Publish(t.Context(), releaseChannel, wakeKey).Err(); err != nil {
		t.Fatal(err)
	}
	o := await(t, res)
	if o.err != nil {
		t.Fatalf("waiter: %v", o.err)
	}
	if d := o.at.Sub(announced); d > wakeBound {
		t.Errorf("waiter acquired %v after the announcement, want a wake-up", d)
	}
}

// subscribeReleases subscribes to srv's release channel directly, as
// another proxy would.
func subscribeReleases(t *testing.T, srv *redistest.Server) *redis.PubSub {
	t.Helper()
	ps := srv.Client().Subscribe(t.Context(), releaseChannel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	return ps
}

// published reports the keys published on ps so far. A PING through the
// subscription orders the check: any message published before it arrives
// first.
func published(t *testing.T, ps *redis.PubSub, what string) []string {
	t.Helper()
	if err := ps.Ping(t.Context(), what); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for {
		msg, err := ps.Receive(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		m, ok := msg.(*redis.Message)
		if !ok {
			return keys // the pong
		}
		keys = append(keys, m.Payload)
	}
}

// TestRedisReleasesPublishOnlyWhenMarked: each release script publishes
// the key it deleted when a waiter marked it, and nothing otherwise.
func TestRedisReleasesPublishOnlyWhenMarked(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	ps := subscribeReleases(t, srv)
	steps := []struct {
		name     string
		run      func() (bool, error)
		want     bool
		releases bool
	}{
		{"compare-and-delete, other token", func() (bool, error) { return nodetest.CompareAndDelete(t.Context(), r, "k", "other", true) }, false, false},
		{"compare-and-delete, own token", func() (bool, error) { return nodetest.CompareAndDelete(t.Context(), r, "k", "tok", true) }, true, true},
		{"delete, absent", func() (bool, error) { return nodetest.Delete(t.Context(), r, "k", true) }, false, false},
		{"delete, present", func() (bool, error) {
			if _, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute); err != nil {
				return false, err
			}
			return nodetest.Delete(t.Context(), r, "k", true)
		}, true, true},
		{"last hold dropped", func() (bool, error) {
			if _, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute); err != nil {
				return false, err
			}
			n, ok, err := nodetest.Unhold(t.Context(), r, "k", "tok")
			return ok && n == 0, err
		}, true, true},
		{"multi-key release", func() (bool, error) {
			if _, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute); err != nil {
				return false, err
			}
			res, err := nodetest.ReleaseEach(t.Context(), r, []string{"k"}, "tok")
			return len(res) == 1 && res[0], err
		}, true, true},
		{"async compare-and-delete", func() (bool, error) {
			if _, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute); err != nil {
				return false, err
			}
			ch := make(chan quorum.Reply, 1)
			cmd := quorum.Cmd{Kind: quorum.CompareAndDelete, Key: "k", Token: "tok", Notify: true}
			r.Do(time.Now().Add(time.Second), cmd, quorum.ReceiverFunc(func(rep quorum.Reply) { ch <- rep }))
			a := <-ch
			return a.OK, a.Err
		}, true, true},
	}
	for _, marked := range []bool{false, true} {
		wk := WaitKey("k")
		if err := srv.Client().Del(t.Context(), wk).Err(); err != nil {
			t.Fatal(err)
		}
		if marked {
			if err := srv.Client().Set(t.Context(), wk, "1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := nodetest.SetNX(t.Context(), r, "k", "tok", time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			name := fmt.Sprintf("%s (marked: %v)", st.name, marked)
			got, err := st.run()
			if err != nil || got != st.want {
				t.Fatalf("%s = %v, %v; want %v", name, got, err, st.want)
			}
			var want []string
			if marked && st.releases {
				want = []string{"k"}
			}
			if keys := published(t, ps, name); !slices.Equal(keys, want) {
				t.Fatalf("%s: published %q, want %q", name, keys, want)
			}
		}
	}
}

// TestRedisSetNXMarked: a marked SET NX takes a free key without marking
// it, marks a held one, and never shortens a longer mark.
func TestRedisSetNXMarked(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	c := srv.Client()
	wk := WaitKey("k")
	markTTL := func() time.Duration {
		t.Helper()
		d, err := c.PTTL(t.Context(), wk).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if ok, err := nodetest.SetNXMarked(t.Context(), r, "k", "a", time.Minute, time.Minute); !ok || err != nil {
		t.Fatalf("marked SET NX of a free key = %v, %v", ok, err)
	}
	if d := markTTL(); d >= 0 {
		t.Fatalf("a free key was marked (pttl %v)", d)
	}
	if ok, err := nodetest.SetNXMarked(t.Context(), r, "k", "b", time.Minute, time.Minute); ok || err != nil {
		t.Fatalf("marked SET NX of a held key = %v, %v", ok, err)
	}
	if d := markTTL(); d < 30*time.Second {
		t.Fatalf("held key's mark lasts %v, want about a minute", d)
	}
	if ok, err := nodetest.SetNXMarked(t.Context(), r, "k", "c", time.Minute, time.Second); ok || err != nil {
		t.Fatalf("second marked SET NX = %v, %v", ok, err)
	}
	if d := markTTL(); d < 30*time.Second {
		t.Fatalf("a shorter mark cut the first to %v", d)
	}
	if tok, _, _, _ := nodetest.Get(t.Context(), r, "k"); tok != "a" {
		t.Fatalf("key holds %q, want the first SET's token", tok)
	}
}
