package quorum_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// A reader's fence that another reader overtook is taken again, and the
// validity it reports counts the time of both readings, not only the
// last one's: each reading here takes a second of the cluster's clock.
func TestSharedFenceCountsEveryTry(t *testing.T) {
	clk := &clock{t: time.Now()}
	var overtaken atomic.Int32 // raises answered as overtaken
	var nodes []quorum.Node
	for i, name := range []string{"m1", "m2", "m3"} {
		m := embedded.New(name)
		t.Cleanup(func() { m.Close() })
		h := &nodetest.Hooked{Node: m}
		if i == 0 {
			h.Before = func(_ context.Context, cmd quorum.Cmd) error {
				if cmd.Kind == quorum.ReadFence {
					clk.advance(time.Second)
				}
				return nil
			}
		}
		h.After = func(cmd quorum.Cmd, rep *quorum.Reply) {
			// The first reading's raise finds a later reader's fence
			// on every node.
			if cmd.Kind == quorum.RaiseFence && overtaken.Load() < 3 {
				overtaken.Add(1)
				rep.N = cmd.N + 1
			}
		}
		nodes = append(nodes, h)
	}
	cfg := quorum.DefaultConfig()
	cfg.Now = clk.Now
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l := quorum.Lock{Key: "k", Token: quorum.NewSharedToken(), Validity: 10 * time.Second}
	f, err := c.Fence(context.Background(), &l)
	if err != nil || f <= 0 {
		t.Fatalf("Fence = %d, %v", f, err)
	}
	if got := overtaken.Load(); got != 3 {
		t.Fatalf("%d raises overtaken, want the first reading's 3", got)
	}
	if want := 8 * time.Second; l.Validity != want {
		t.Fatalf("validity after two readings of a second each: %v, want %v", l.Validity, want)
	}
}
