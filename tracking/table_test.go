package tracking_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/tracking"
)

// client records what it was told.
type client struct {
	mu   sync.Mutex
	told [][]string // nil entries are flushes
}

func (c *client) Invalidate(keys []string) {
	c.mu.Lock()
	c.told = append(c.told, keys)
	c.mu.Unlock()
}

func (c *client) take() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.told
	c.told = nil
	return out
}

func newTable(t *testing.T) *tracking.Table {
	t.Helper()
	var nodes []quorum.Node
	for _, n := range []string{"m1", "m2", "m3"} {
		m := embedded.New(n)
		t.Cleanup(func() { m.Close() })
		nodes = append(nodes, m)
	}
	cl, err := quorum.New(nodes, quorum.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return tracking.New(cl)
}

func equal(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return (x == nil) == (y == nil) && slices.Equal(x, y) })
}

// TestTableDefaultMode: a key read is reported once, then forgotten, as
// Redis forgets it; the other copies of the change (one per node) find
// nothing to tell.
func TestTableDefaultMode(t *testing.T) {
	tb := newTable(t)
	c := &client{}
	tb.Begin(c, []string{"k", "redlockd:fence:{k}"})
	tb.End(c, []string{"k", "redlockd:fence:{k}"})
	tb.Invalidated([]string{"k", "other", "redlockd:fence:{k}"})
	tb.Invalidated([]string{"k"})
	if got := c.take(); !equal(got, [][]string{{"k"}}) {
		t.Fatalf("told %q, want [[k]]", got)
	}
}

// TestTableReadInFlight: while a read is in flight every node's copy of
// a change is told (another node's answer to the read may predate the
// change); once the read ended, the next copy is the last.
func TestTableReadInFlight(t *testing.T) {
	tb := newTable(t)
	c := &client{}
	tb.Begin(c, []string{"k"})
	tb.Invalidated([]string{"k"})
	tb.Invalidated([]string{"k"})
	tb.End(c, []string{"k"})
	tb.Invalidated([]string{"k"})
	tb.Invalidated([]string{"k"})
	if got := c.take(); !equal(got, [][]string{{"k"}, {"k"}, {"k"}}) {
		t.Fatalf("told %q, want three", got)
	}
}

// TestTableFlush: a nil report reaches every tracking client and forgets
// what they read; BCAST clients hear of their prefixes only, of every
// copy.
func TestTableFlush(t *testing.T) {
	tb := newTable(t)
	reader, bc, all := &client{}, &client{}, &client{}
	tb.Begin(reader, []string{"k"})
	tb.End(reader, []string{"k"})
	tb.Broadcast(bc, []string{"a:", "b:"})
	tb.Broadcast(all, nil)
	tb.Invalidated([]string{"a:1", "c:1", "redlockd:wait:{a:1}"})
	tb.Invalidated([]string{"a:1"})
	tb.Invalidated(nil)
	tb.Invalidated([]string{"k"})
	if got := reader.take(); !equal(got, [][]string{nil}) {
		t.Fatalf("reader told %q", got)
	}
	if got := bc.take(); !equal(got, [][]string{{"a:1"}, {"a:1"}, nil}) {
		t.Fatalf("BCAST a:,b: told %q", got)
	}
	if got := all.take(); !equal(got, [][]string{{"a:1", "c:1"}, {"a:1"}, nil, {"k"}}) {
		t.Fatalf("BCAST told %q", got)
	}
	tb.Forget(all)
	tb.Invalidated([]string{"k"})
	if got := all.take(); got != nil {
		t.Fatalf("forgotten client told %q", got)
	}
}

// TestTableBounded: past MaxKeys, tracked keys are invalidated to make
// room (their readers told, as Redis evicts from its tracking table), so
// a client that reads ever new keys cannot grow the table without bound.
func TestTableBounded(t *testing.T) {
	tb := newTable(t)
	tb.MaxKeys = 10
	c := &client{}
	for i := range 100 {
		k := []string{string(rune('a'+i%26)) + string(rune('0'+i/26))}
		tb.Begin(c, k)
		tb.End(c, k)
	}
	if n := tb.Keys(); n > 10 {
		t.Fatalf("%d keys tracked, want at most 10", n)
	}
	evicted := 0
	for _, ks := range c.take() {
		evicted += len(ks)
	}
	if evicted != 90 {
		t.Fatalf("%d keys invalidated to make room, want 90", evicted)
	}
}
