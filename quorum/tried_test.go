package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// A blocking acquire whose caller made the first round itself (Tried)
// goes on as after that round: its first round is the marked one, run
// at once, where an acquire of its own begins with an unmarked round and
// then runs the marked one at once. Either way it is then woken by the
// holder's release (the retry pause is an hour).
func TestTriedWaitBeginsMarked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []quorum.Option
		marks []bool // the marks of the SET NX rounds before the release
	}{
		{"own first round", []quorum.Option{quorum.Wait(time.Minute)}, []bool{false, true}},
		{"tried", []quorum.Option{quorum.Wait(time.Minute), quorum.Tried(quorum.ErrNotAcquired)}, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := memNodes(3)
			holder := slowRetryCluster(t, nodes)
			t.Cleanup(func() { holder.Close() })
			mustAcquire(t, holder, "holder")
			rounds := make(chan bool, 16) // the first node's SET NX, marked or not
			wrapped := make([]quorum.Node, len(nodes))
			for i, n := range nodes {
				h := &nodetest.Hooked{Node: n}
				if i == 0 {
					h.After = func(cmd quorum.Cmd, _ *quorum.Reply) {
						if cmd.Kind == quorum.SetNX {
							rounds <- cmd.Add > 0
						}
					}
				}
				wrapped[i] = h
			}
			waiter := slowRetryCluster(t, wrapped)
			t.Cleanup(func() { waiter.Close() })
			res := make(chan acquired, 1)
			go func() {
				l, err := waiter.Acquire(context.Background(), wkey, "waiter", time.Minute, tc.opts...)
				res <- acquired{l, err}
			}()
			for i, want := range tc.marks {
				select {
				case got := <-rounds:
					if got != want {
						t.Fatalf("round %d marked %v, want %v", i+1, got, want)
					}
				case <-time.After(prompt):
					t.Fatalf("round %d did not come", i+1)
				}
			}
			pollUntil(t, "the waiter in its pause", func() bool { return waiter.Waiters(wkey) == 1 })
			select {
			case got := <-rounds:
				t.Fatalf("another round (marked %v) before the release", got)
			default:
			}
			if ok, err := holder.Release(context.Background(), wkey, "holder"); !ok || err != nil {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			if a := recv(t, res, prompt); a.err != nil || a.l.Token != "waiter" {
				t.Fatalf("the waiter: %+v", a)
			}
		})
	}
}

// A release that lands between the caller's refused first round and its
// wait's start announces nothing to the waiter, which has not joined the
// key's waiters yet: the wait's first round, run at once, finds the key
// free, for every kind (the retry pause is an hour).
func TestTriedWaitFindsAMissedRelease(t *testing.T) {
	c := slowRetryCluster(t, memNodes(3))
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	opts := []quorum.Option{quorum.Wait(time.Minute), quorum.Tried(quorum.ErrNotAcquired)}
	for _, tc := range []struct {
		name string
		wait func() (quorum.Lock, error)
	}{
		{"plain", func() (quorum.Lock, error) { return c.Acquire(ctx, wkey, "waiter", time.Minute, opts...) }},
		{"reader", func() (quorum.Lock, error) { return c.AcquireShared(ctx, wkey, time.Minute, opts...) }},
		{"permit", func() (quorum.Lock, error) { return c.AcquirePermit(ctx, wkey, 1, time.Minute, opts...) }},
		{"owner", func() (quorum.Lock, error) {
			r, err := c.LockOwner(ctx, wkey, "w", time.Minute, opts...)
			return r.Lock, err
		}},
	} {
		// The holder's lock, taken and released before the wait starts.
		mustAcquire(t, c, "holder")
		if ok, err := c.Release(ctx, wkey, "holder"); !ok || err != nil {
			t.Fatalf("%s: Release = %v, %v", tc.name, ok, err)
		}
		res := make(chan acquired, 1)
		go func() {
			l, err := tc.wait()
			res <- acquired{l, err}
		}()
		a := recv(t, res, prompt)
		if a.err != nil {
			t.Fatalf("%s: the wait after a missed release: %v", tc.name, a.err)
		}
		release := c.Release
		if quorum.IsOwnerToken(a.l.Token) {
			release = func(ctx context.Context, key, token string) (bool, error) {
				ok, _, err := c.Unhold(ctx, key, token)
				return ok, err
			}
		}
		if ok, err := release(ctx, wkey, a.l.Token); !ok || err != nil {
			t.Fatalf("%s: releasing the waiter's lock: %v, %v", tc.name, ok, err)
		}
	}
}
