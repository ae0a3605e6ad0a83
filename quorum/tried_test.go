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
