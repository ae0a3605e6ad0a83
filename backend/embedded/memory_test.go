package embedded

import (
	"context"
	"errors"
	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// fakeClock is a settable clock for Memory.now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestMemory(t *testing.T) (*Memory, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Now()}
	m := New("mem")
	m.now = clock.now
	t.Cleanup(func() { _ = m.Close() })
	return m, clock
}

// step is one operation on a node and its expected boolean answer (for Get:
// whether the key is present).
type step struct {
	op      string
	key     string
	token   string
	ttl     time.Duration
	advance time.Duration // clock movement before the op
	want    bool
	wantTok string // Get only
}

// The package itself must not import quorum: the quorum's own internal
// tests import backend for Memory, and that would be a cycle. The check
// lives here instead.
var (
	_ quorum.Node = (*Memory)(nil)
	_ quorum.Node = (*backend.Redis)(nil)
)

// runStep performs st on n, a real or in-memory node.
func runStep(ctx context.Context, n quorum.Node, st step) (got bool, tok string, err error) {
	switch st.op {
	case "setnx":
		got, err = nodetest.SetNX(ctx, n, st.key, st.token, st.ttl)
	case "set":
		err = nodetest.Set(ctx, n, st.key, st.token, st.ttl)
		got = err == nil
	case "cad":
		got, err = nodetest.CompareAndDelete(ctx, n, st.key, st.token, false)
	case "cae":
		got, err = nodetest.CompareAndExtend(ctx, n, st.key, st.token, st.ttl)
	case "get":
		tok, _, got, err = nodetest.Get(ctx, n, st.key)
	case "del":
		got, err = nodetest.Delete(ctx, n, st.key, false)
	case "expire":
		got, err = nodetest.Expire(ctx, n, st.key, st.ttl)
	default:
		panic("unknown op " + st.op)
	}
	return got, tok, err
}

// semanticsCases are shared by the Memory and Redis tests; only Memory
// honours the advance fields (Redis cases use none).
var semanticsCases = []struct {
	name  string
	steps []step
}{
	{"setnx twice", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "setnx", key: "k", token: "b", ttl: time.Minute, want: false},
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: false},
		{op: "get", key: "k", want: true, wantTok: "a"},
	}},
	{"set overrides", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "set", key: "k", token: "b", ttl: time.Minute, want: true},
		{op: "get", key: "k", want: true, wantTok: "b"},
	}},
	{"compare and delete", []step{
		{op: "cad", key: "k", token: "a", want: false},
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "cad", key: "k", token: "b", want: false},
		{op: "get", key: "k", want: true, wantTok: "a"},
		{op: "cad", key: "k", token: "a", want: true},
		{op: "get", key: "k", want: false},
		{op: "cad", key: "k", token: "a", want: false},
	}},
	{"compare and extend", []step{
		{op: "cae", key: "k", token: "a", ttl: time.Minute, want: false},
		{op: "get", key: "k", want: false},
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "cae", key: "k", token: "b", ttl: time.Minute, want: false},
		{op: "cae", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "get", key: "k", want: true, wantTok: "a"},
	}},
	{"delete", []step{
		{op: "del", key: "k", want: false},
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "del", key: "k", want: true},
		{op: "get", key: "k", want: false},
		{op: "setnx", key: "k", token: "b", ttl: time.Minute, want: true},
	}},
	{"expire", []step{
		{op: "expire", key: "k", ttl: time.Minute, want: false},
		{op: "get", key: "k", want: false},
		{op: "setnx", key: "k", token: "a", ttl: time.Minute, want: true},
		{op: "expire", key: "k", ttl: time.Hour, want: true},
		{op: "get", key: "k", want: true, wantTok: "a"},
	}},
	{"keys are independent", []step{
		{op: "setnx", key: "k1", token: "a", ttl: time.Minute, want: true},
		{op: "setnx", key: "k2", token: "b", ttl: time.Minute, want: true},
		{op: "cad", key: "k1", token: "a", want: true},
		{op: "get", key: "k2", want: true, wantTok: "b"},
	}},
}

// expiryCases need a controllable clock: Memory only.
var expiryCases = []struct {
	name  string
	steps []step
}{
	{"expired key is absent", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Second, want: true},
		{op: "get", key: "k", advance: 999 * time.Millisecond, want: true, wantTok: "a"},
		{op: "get", key: "k", advance: time.Millisecond, want: false},
		{op: "setnx", key: "k", token: "b", ttl: time.Second, want: true},
	}},
	{"expired key cannot be released or extended", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Second, want: true},
		{op: "cae", key: "k", token: "a", ttl: time.Second, advance: time.Second, want: false},
		{op: "cad", key: "k", token: "a", want: false},
		{op: "del", key: "k", want: false},
		{op: "expire", key: "k", ttl: time.Second, want: false},
	}},
	{"extend pushes expiry", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Second, want: true},
		{op: "cae", key: "k", token: "a", ttl: time.Second, advance: 900 * time.Millisecond, want: true},
		{op: "get", key: "k", advance: 900 * time.Millisecond, want: true, wantTok: "a"},
		{op: "get", key: "k", advance: 100 * time.Millisecond, want: false},
	}},
	{"expire pushes expiry", []step{
		{op: "setnx", key: "k", token: "a", ttl: time.Second, want: true},
		{op: "expire", key: "k", ttl: time.Second, advance: 900 * time.Millisecond, want: true},
		{op: "get", key: "k", advance: 900 * time.Millisecond, want: true, wantTok: "a"},
	}},
}

func TestMemorySemantics(t *testing.T) {
	cases := append(append(semanticsCases[:0:0], semanticsCases...), expiryCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, clock := newTestMemory(t)
			for i, st := range tc.steps {
				clock.advance(st.advance)
				got, tok, err := runStep(t.Context(), m, st)
				if err != nil {
					t.Fatalf("step %d %s: %v", i, st.op, err)
				}
				if got != st.want || tok != st.wantTok {
					t.Fatalf("step %d %s %s: got (%v, %q), want (%v, %q)", i, st.op, st.key, got, tok, st.want, st.wantTok)
				}
			}
		})
	}
}

func TestMemoryGetPTTL(t *testing.T) {
	m, clock := newTestMemory(t)
	ctx := t.Context()
	if ok, err := nodetest.SetNX(ctx, m, "k", "a", 10*time.Second); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	clock.advance(3 * time.Second)
	tok, pttl, ok, err := nodetest.Get(ctx, m, "k")
	if err != nil || !ok || tok != "a" || pttl != 7*time.Second {
		t.Fatalf("Get = %q, %v, %v, %v; want a, 7s, true, nil", tok, pttl, ok, err)
	}
}

func TestMemoryErrors(t *testing.T) {
	boom := errors.New("boom")
	// A caller gives up through its deadline: Do has no other way.
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	tests := []struct {
		name    string
		setup   func(f *faultnode.Node)
		ctx     context.Context
		st      step
		wantErr error
	}{
		{"expired deadline", nil, expired, step{op: "setnx", key: "k", token: "a", ttl: time.Second}, context.DeadlineExceeded},
		{"expired deadline on get", nil, expired, step{op: "get", key: "k"}, context.DeadlineExceeded},
		{"fault", func(f *faultnode.Node) { f.SetFault(boom) }, nil, step{op: "cad", key: "k", token: "a"}, boom},
		{"closed", func(f *faultnode.Node) { _ = f.Close() }, nil, step{op: "del", key: "k"}, backend.ErrClosed},
		{"zero ttl", nil, nil, step{op: "setnx", key: "k", token: "a"}, backend.ErrInvalidTTL},
		{"negative ttl on expire", nil, nil, step{op: "expire", key: "k", ttl: -time.Second}, backend.ErrInvalidTTL},
		{"zero ttl on extend", nil, nil, step{op: "cae", key: "k", token: "a"}, backend.ErrInvalidTTL},
		{"zero ttl on set", nil, nil, step{op: "set", key: "k", token: "a"}, backend.ErrInvalidTTL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory(t)
			f := faultnode.Wrap(m)
			if tc.setup != nil {
				tc.setup(f)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			if _, _, err := runStep(ctx, f, tc.st); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestMemoryFaultCleared(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	f.SetFault(errors.New("down"))
	if _, err := nodetest.SetNX(t.Context(), f, "k", "a", time.Second); err == nil {
		t.Fatal("SetNX succeeded on a faulted node")
	}
	f.SetFault(nil)
	if ok, err := nodetest.SetNX(t.Context(), f, "k", "a", time.Second); !ok || err != nil {
		t.Fatalf("SetNX after clearing fault = %v, %v", ok, err)
	}
	if got := f.Calls("SetNX"); got != 2 {
		t.Fatalf("Calls(SetNX) = %d, want 2 (failed calls count)", got)
	}
}

func TestMemoryDelayHonoursDeadline(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	f.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := nodetest.SetNX(ctx, f, "k", "a", time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	// The timed-out call must not have written.
	f.SetDelay(0)
	if _, _, ok, err := nodetest.Get(t.Context(), f, "k"); ok || err != nil {
		t.Fatalf("Get after timed-out SetNX = %v, %v; want absent", ok, err)
	}
}

func TestMemoryDelayThenSucceeds(t *testing.T) {
	m, _ := newTestMemory(t)
	f := faultnode.Wrap(m)
	f.SetDelay(time.Millisecond)
	if ok, err := nodetest.SetNX(t.Context(), f, "k", "a", time.Second); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
}

func TestMemoryCloseTwice(t *testing.T) {
	m := New("mem")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMemorySweepBoundsMap(t *testing.T) {
	m, clock := newTestMemory(t)
	ctx := t.Context()
	for i := range 10000 {
		key := "k" + strconv.Itoa(i)
		if _, err := nodetest.SetNX(ctx, m, key, "t", time.Millisecond); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Millisecond) // every earlier key has expired
	}
	m.mu.Lock()
	n := len(m.keys)
	m.mu.Unlock()
	if n > 200 {
		t.Fatalf("map holds %d keys after 10000 short-lived writes; sweep not working", n)
	}
}

func TestMemoryConcurrentSetNXHasOneWinner(t *testing.T) {
	m := New("mem")
	defer m.Close()
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan string, n)
	for i := range n {
		tok := string(rune('a' + i))
		wg.Go(func() {
			if ok, err := nodetest.SetNX(t.Context(), m, "k", tok, time.Minute); err == nil && ok {
				wins <- tok
			}
		})
	}
	wg.Wait()
	close(wins)
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners = %v, want exactly one", winners)
	}
	if tok, _, _, _ := nodetest.Get(t.Context(), m, "k"); tok != winners[0] {
		t.Fatalf("stored token %q, winner %q", tok, winners[0])
	}
}
