package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// asyncAnswer is one callback's outcome.
type asyncAnswer struct {
	yes   bool
	token string
	err   error
}

// awaitAsync runs start with a done callback and waits for it, failing the
// test when the callback runs twice or never.
func awaitAsync(t *testing.T, start func(done func(asyncAnswer))) asyncAnswer {
	t.Helper()
	ch := make(chan asyncAnswer, 2)
	start(func(a asyncAnswer) { ch <- a })
	a := <-ch
	select {
	case b := <-ch:
		t.Fatalf("callback ran twice: %+v then %+v", a, b)
	case <-time.After(2 * time.Millisecond):
	}
	return a
}

func boolDone(done func(asyncAnswer)) quorum.Receiver {
	return quorum.ReceiverFunc(func(rep quorum.Reply) { done(asyncAnswer{yes: rep.OK, err: rep.Err}) })
}

func setNXCmd(key, token string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: time.Minute}
}

// asyncRound is lockRound through Do.
func asyncRound(t *testing.T, r *Redis, key string) error {
	t.Helper()
	dl := func() time.Time { return time.Now().Add(time.Second) }
	tok := "t-" + key
	if a := awaitAsync(t, func(d func(asyncAnswer)) { r.Do(dl(), setNXCmd(key, tok), boolDone(d)) }); !a.yes || a.err != nil {
		return fmt.Errorf("SetNX %s = %+v", key, a)
	}
	if a := awaitAsync(t, func(d func(asyncAnswer)) { r.Do(dl(), setNXCmd(key, "other"), boolDone(d)) }); a.yes || a.err != nil {
		return fmt.Errorf("second SetNX %s = %+v", key, a)
	}
	a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(dl(), quorum.Cmd{Kind: quorum.Get, Key: key}, quorum.ReceiverFunc(func(rep quorum.Reply) {
			d(asyncAnswer{yes: rep.OK && rep.TTL > 0, token: rep.Token, err: rep.Err})
		}))
	})
	if !a.yes || a.token != tok || a.err != nil {
		return fmt.Errorf("Get %s = %+v", key, a)
	}
	if a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(dl(), quorum.Cmd{Kind: quorum.CompareAndExtend, Key: key, Token: tok, TTL: time.Minute}, boolDone(d))
	}); !a.yes || a.err != nil {
		return fmt.Errorf("CompareAndExtend %s = %+v", key, a)
	}
	if a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(dl(), quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: "other"}, boolDone(d))
	}); a.yes || a.err != nil {
		return fmt.Errorf("CompareAndDelete with another token %s = %+v", key, a)
	}
	if a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(dl(), quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: tok, Notify: true}, boolDone(d))
	}); !a.yes || a.err != nil {
		return fmt.Errorf("CompareAndDelete %s = %+v", key, a)
	}
	return nil
}

func TestMuxAsyncSemantics(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := asyncRound(t, r, "k"); err != nil {
		t.Fatal(err)
	}
	// A forgotten script is loaded again through EVAL, under the same deadline.
	if err := srv.Client().ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := asyncRound(t, r, "after-flush"); err != nil {
		t.Fatal(err)
	}
}

// Under a stall each submitted request fails at its own deadline, through
// the line's one timer, and nothing is answered twice. After SIGCONT the
// node answers again.
func TestMuxAsyncStallFailsEachAtItsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	if err := asyncRound(t, r, "warm"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	stopped := true
	defer func() {
		if stopped {
			srv.Cont()
		}
	}()
	const n = 20
	type answer struct {
		err  error
		late time.Duration
	}
	answers := make(chan answer, 2*n)
	start := time.Now()
	for i := range n {
		// Budgets out of order, so the sweeper must look past the first.
		budget := time.Duration(10+5*((i*7)%n)) * time.Millisecond
		dl := start.Add(budget)
		r.Do(dl, setNXCmd("stalled", "x"), quorum.ReceiverFunc(func(rep quorum.Reply) {
			answers <- answer{rep.Err, time.Since(dl)}
		}))
	}
	for range n {
		a := <-answers
		if !errors.Is(a.err, context.DeadlineExceeded) && !errors.Is(a.err, wire.ErrConnReset) {
			t.Errorf("err = %v; want a deadline or reset error", a.err)
		}
		// The server stays stopped: a request its deadline did not end
		// would wait for the stall's end or the budget for calls without a
		// deadline, so half of that budget is a wide margin.
		if a.late > wire.NoDeadlineBudget/2 {
			t.Errorf("answered %v after its deadline", a.late)
		}
	}
	srv.Cont()
	stopped = false
	for i := range 5 {
		if err := asyncRound(t, r, fmt.Sprintf("after%d", i)); err != nil {
			t.Fatalf("after SIGCONT: %v", err)
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("a stalled request was answered twice: %+v", a)
	default:
	}
}

// A request already past its deadline is never sent.
func TestMuxAsyncExpiredIsNotSent(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(time.Now().Add(-time.Millisecond), setNXCmd("k", "a"), boolDone(d))
	})
	if !errors.Is(a.err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", a.err)
	}
	if err := asyncRound(t, r, "other"); err != nil { // the line still works
		t.Fatal(err)
	}
	if n, err := srv.Client().Exists(t.Context(), "k").Result(); err != nil || n != 0 {
		t.Fatalf("an expired SetNX reached the server (read: %v)", err)
	}
}

// Many concurrent submitters share the lines; every callback runs once.
func TestMuxAsyncConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.Addr())
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for g := range 50 {
		wg.Go(func() {
			for i := range 20 {
				if err := asyncRound(t, r, fmt.Sprintf("k%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestMuxAsyncAfterClose(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.Addr(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := asyncRound(t, r, "k"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	a := awaitAsync(t, func(d func(asyncAnswer)) {
		r.Do(time.Now().Add(time.Second), setNXCmd("k2", "a"), boolDone(d))
	})
	if !errors.Is(a.err, ErrClosed) {
		t.Fatalf("SetNX after Close: %v", a.err)
	}
}
