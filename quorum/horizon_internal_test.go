package quorum

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// raiseNode is a watched node that answers every command at once with OK,
// except RaiseHorizon, whose replies it holds until release (or fails with
// fail).
// It stays a stub: its tests call the unexported horizon record (coverHorizon, horizons), so they live in package quorum, which cannot import the engine.
type raiseNode struct {
	mu     sync.Mutex
	held   []func()
	raises []time.Duration
	fail   error
}

func (n *raiseNode) Name() string       { return "raise" }
func (n *raiseNode) Watch(Watcher) bool { return true }
func (n *raiseNode) Close() error       { return nil }
func (n *raiseNode) Do(_ time.Time, cmd Cmd, r Receiver) {
	if cmd.Kind != RaiseHorizon {
		r.Receive(Reply{OK: true})
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.raises = append(n.raises, cmd.TTL)
	rep := Reply{OK: true, TTL: cmd.TTL, Err: n.fail}
	n.held = append(n.held, func() { r.Receive(rep) })
}

// release answers every raise held so far.
func (n *raiseNode) release() {
	n.mu.Lock()
	held := n.held
	n.held = nil
	n.mu.Unlock()
	for _, f := range held {
		f()
	}
}

func (n *raiseNode) raised() []time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Duration(nil), n.raises...)
}

func raiseCluster(t *testing.T) (*Cluster, *raiseNode) {
	t.Helper()
	n := &raiseNode{}
	cfg := testConfig()
	cfg.MaxTTL = time.Hour
	now := time.Now()
	cfg.Now = func() time.Time { return now } // exact ttls to compare
	return newCluster(t, []Node{n}, cfg), n
}

// TestCoverHorizonSharesOneRaise: covers asked while a raise is on its way
// wait for it (one raise, not one each); a cover within the horizon then
// known needs none; one beyond it raises again, never past MaxTTL plus the
// slack's second unless the drift allowance on a MaxTTL lock needs more;
// a cover past MaxTTL is refused without a raise.
func TestCoverHorizonSharesOneRaise(t *testing.T) {
	c, n := raiseCluster(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		c.coverHorizon(0, 10*time.Minute, func(err error) { errs <- err; wg.Done() })
	}
	if got := n.raised(); len(got) != 1 || got[0] != 20*time.Minute {
		t.Fatalf("raises while one is on its way: %v, want one of 20m", got)
	}
	n.release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a cover failed: %v", err)
		}
	}
	done := false
	c.coverHorizon(0, 15*time.Minute, func(err error) { done = err == nil })
	if !done || len(n.raised()) != 1 {
		t.Fatalf("a cover within the known horizon: done %v, raises %v", done, n.raised())
	}
	c.coverHorizon(0, 50*time.Minute, func(error) {})
	if got := n.raised(); len(got) != 2 || got[1] != time.Hour+horizonFloor {
		t.Fatalf("raises %v, want a second one capped at MaxTTL+%v", got, horizonFloor)
	}
	n.release()
	var err error
	c.coverHorizon(0, 2*time.Hour, func(e error) { err = e })
	if got := n.raised(); len(got) != 2 || !errors.Is(err, ErrHorizon) {
		t.Fatalf("a cover past MaxTTL: raises %v, err %v; want no raise and ErrHorizon", got, err)
	}
	c.coverHorizon(0, time.Hour, func(error) {})
	if got := n.raised(); len(got) != 3 || got[2] > c.horizons.ceiling || got[2] < time.Hour {
		t.Fatalf("raises %v, want a third one for the 1h MaxTTL, at most the ceiling %v", got, c.horizons.ceiling)
	}
	n.release()
}

// TestCoverHorizonFailedRaise: a failed raise fails the covers it was for
// with ErrHorizon, and the next cover raises again.
func TestCoverHorizonFailedRaise(t *testing.T) {
	c, n := raiseCluster(t)
	n.fail = errors.New("down")
	var got error
	c.coverHorizon(0, time.Minute, func(err error) { got = err })
	n.release()
	if !errors.Is(got, ErrHorizon) {
		t.Fatalf("cover after a failed raise = %v, want ErrHorizon", got)
	}
	n.mu.Lock()
	n.fail = nil
	n.mu.Unlock()
	got = errors.New("not called")
	c.coverHorizon(0, time.Minute, func(err error) { got = err })
	n.release()
	if got != nil || len(n.raised()) != 2 {
		t.Fatalf("cover after a working raise = %v, raises %v", got, n.raised())
	}
}

// TestLeftTTL: what each reply leaves to cover; a script's reply counts by
// its TTL whatever its value.
func TestLeftTTL(t *testing.T) {
	for _, tc := range []struct {
		cmd  Cmd
		rep  Reply
		want time.Duration
	}{
		{Cmd{Kind: SetNX, TTL: time.Second}, Reply{OK: true}, time.Second},
		{Cmd{Kind: SetNX, TTL: time.Second}, Reply{}, 0},
		{Cmd{Kind: SetNX, TTL: time.Second}, Reply{OK: true, Err: errors.New("x")}, 0},
		{Cmd{Kind: AddTTL, Add: time.Second, Limit: time.Hour}, Reply{OK: true, TTL: 5 * time.Second}, 5 * time.Second},
		{Cmd{Kind: Eval}, Reply{TTL: 7 * time.Second, Value: &Value{Kind: NilValue}}, 7 * time.Second},
		{Cmd{Kind: CompareAndDelete}, Reply{OK: true}, 0},
		{Cmd{Kind: RaiseFence, TTL: FenceTTL}, Reply{OK: true}, 0},
		{Cmd{Kind: HoldOwner, TTL: time.Minute}, Reply{OK: true}, time.Minute},
		{Cmd{Kind: Expire, TTL: time.Minute}, Reply{OK: true}, time.Minute},
		{Cmd{Kind: CompareAndSwap, TTL: time.Hour}, Reply{OK: true}, time.Hour},
		{Cmd{Kind: CompareAndSwap, TTL: time.Hour}, Reply{}, 0},
	} {
		if got := leftTTL(tc.cmd.Kind, tc.cmd.TTL, &tc.rep); got != tc.want {
			t.Errorf("leftTTL(%v, %+v) = %v, want %v", tc.cmd.Kind, tc.rep, got, tc.want)
		}
	}
}

// TestCoverHorizonPastExpiry: a cover whose key has expired by the time
// its raise would be sent (a slow machine, or a clock that jumps) is
// complete without a raise: there is nothing left for a horizon to cover,
// and no raise of a non-positive ttl is asked of the node.
func TestCoverHorizonPastExpiry(t *testing.T) {
	n := &raiseNode{}
	cfg := testConfig()
	cfg.MaxTTL = time.Hour
	var mu sync.Mutex
	now := time.Now()
	cfg.Now = func() time.Time { // each reading a minute later
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
	c := newCluster(t, []Node{n}, cfg)
	errs := make(chan error, 1)
	c.coverHorizon(0, 30*time.Second, func(err error) { errs <- err })
	select {
	case err := <-errs:
		if err != nil {
			t.Fatalf("cover of an expired key: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cover of an expired key never completed")
	}
	if got := n.raised(); len(got) != 0 {
		t.Fatalf("raises for an expired key: %v, want none", got)
	}
}

// coverHorizon is what nodeCall.Receive does with a reply: done is called
// once node i's horizon covers a key that lives ttl from now on the node,
// raising it first where it does not (at once when it already does, else
// from the raise's reply), with nil or an error matching ErrHorizon.
func (c *Cluster) coverHorizon(i int, ttl time.Duration, done func(error)) {
	if need, ok := c.horizons.covers(i, ttl, time.Time{}); !ok {
		c.horizons.wait(i, need, done)
		return
	}
	done(nil)
}

// TestCoversCountsFromTheRead: on the real clock a reply's key is taken
// to live ttl from when the reply was read (Reply.At, after the node ran
// the command), so an older read needs less horizon than now would;
// on any other clock, and for a reply that does not say, from now.
func TestCoversCountsFromTheRead(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTTL = time.Hour
	c := newCluster(t, []Node{&raiseNode{}}, cfg)
	h := c.horizons
	if !h.atIsNow {
		t.Fatal("a Cluster on time.Now does not take replies' At as its clock")
	}
	at := time.Now().Add(-time.Minute)
	need, _ := h.covers(0, 10*time.Minute, at)
	if want := h.offset(at.Add(10 * time.Minute)); need != want {
		t.Fatalf("need from a read a minute ago: %v, want %v", time.Duration(need), time.Duration(want))
	}
	before := h.offset(time.Now().Add(10 * time.Minute))
	if need, _ := h.covers(0, 10*time.Minute, time.Time{}); need < before {
		t.Fatalf("need of a reply without At: %v, want from now (at least %v)", time.Duration(need), time.Duration(before))
	}

	tc, _ := raiseCluster(t) // its clock stands still at its start
	th := tc.horizons
	if th.atIsNow {
		t.Fatal("a Cluster on a test clock takes replies' At as its clock")
	}
	need, _ = th.covers(0, 10*time.Minute, time.Now().Add(time.Hour))
	if want := th.offset(th.now().Add(10 * time.Minute)); need != want {
		t.Fatalf("need on a test clock: %v, want %v (from its now)", time.Duration(need), time.Duration(want))
	}
}
