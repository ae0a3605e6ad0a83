package compat

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"
)

// triesSpy is a rueidis client that reports each lock script that came
// back nil (a key held by someone else): how a test knows that a waiter
// has tried and is now waiting for an invalidation. It also counts the
// extensions the locker sends.
type triesSpy struct {
	rueidis.Client
	refused chan struct{}
	extends atomic.Int64
	// noLoop makes the locker track with NOLOOP (NoLoopTracking).
	noLoop bool
}

// extendSHA names rueidislock's extension script (in rueidisLockSHAs).
const extendSHA = "852ba6ec6104340ced36643283c856d4698569e4"

func (c *triesSpy) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	words := cmd.Commands()
	isScript := len(words) > 0 && words[0] == "EVALSHA"
	if len(words) > 1 && (words[1] == extendSHA || words[0] == "EVAL" && strings.Contains(words[1], "PEXPIREAT")) {
		c.extends.Add(1)
	}
	r := c.Client.Do(ctx, cmd)
	if isScript && rueidis.IsRedisNil(r.Error()) {
		select {
		case c.refused <- struct{}{}:
		default:
		}
	}
	return r
}

func newLocker(t testing.TB, addr string, validity, extend time.Duration, spy *triesSpy) rueidislock.Locker {
	t.Helper()
	opt := rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true},
		KeyValidity:    validity,
		ExtendInterval: extend,
		NoLoopTracking: spy != nil && spy.noLoop,
	}
	if spy != nil {
		opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			spy.Client = c
			return spy, err
		}
	}
	l, err := rueidislock.NewLocker(opt)
	if err != nil {
		t.Fatalf("rueidislock.NewLocker(%s): %v", addr, err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestRueidisLock runs rueidislock unchanged against one redis-server and
// across two redlockd proxies: a lock taken through one proxy is refused
// through the other, a waiter is woken by the invalidation of the release
// through the other proxy (its only other way out is its context, long),
// and a holder whose keys expire loses the lock (its context is
// cancelled) on the invalidation, long before its next extension.
//
// Through redlockd its scripts run as quorum operations (SET, RENEW,
// UNLOCK), never as replicated scripts: no backend is ever asked to load
// one.
func TestRueidisLock(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		rueidisLockScenario(t, tg.addr, tg.other, len(tg.backends), false)
		if tg.name != redlockdTarget {
			return
		}
		for _, b := range tg.backends {
			loaded, err := b.Client().ScriptExists(testCtx(t), rueidisLockSHAs...).Result()
			if err != nil {
				t.Fatal(err)
			}
			for i, yes := range loaded {
				if yes {
					t.Errorf("backend %s has rueidislock's script %s: it ran as a replicated script", b.Addr(), rueidisLockSHAs[i])
				}
			}
		}
	})
}

// rueidisLockSHAs name rueidislock's scripts (acquire, acquire with
// FallbackSETPX, the two forced acquires, extend, release).
var rueidisLockSHAs = []string{
	"3875d208d9e377969d2022550302cc83ad17b584",
	"fa3d1aaa7e4145457755016a3d5daf72fa7a11bf",
	"c10e8119872659b926e8e28002d9b7fccbf15617",
	"4384ed08baff4dd7071b6c78c516a2fded4ee3e7",
	"852ba6ec6104340ced36643283c856d4698569e4",
	"9eb62214c9af87ae5f9a9f12bb4520281c0d2ae1",
}

// validity is the lock's ttl in the scenarios: long, so that nothing but
// an invalidation can end a wait within the test's time.
const validity = 30 * time.Second

func rueidisLockScenario(t *testing.T, addrA, addrB string, nodes int, noLoop bool) {
	ctx := testCtx(t)
	// No flush of a backend starting its reports can wake the waiter.
	warmTracking(t, ctx, addrA, addrB, nodes)
	spy := &triesSpy{refused: make(chan struct{}, 1), noLoop: noLoop}
	waiterSide := newLocker(t, addrA, validity, 0, spy)
	holderSide := newLocker(t, addrB, validity, 0, &triesSpy{noLoop: noLoop})

	const name = "orders"
	held, release, err := holderSide.WithContext(ctx, name)
	if err != nil {
		t.Fatalf("WithContext through B: %v", err)
	}
	if _, _, err := waiterSide.TryWithContext(ctx, name); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Fatalf("TryWithContext through A while B holds: err = %v, want ErrNotLocked", err)
	}
	drain(spy.refused)

	granted := make(chan time.Time, 1)
	waitErr := make(chan error, 1)
	go func() {
		_, cancel, err := waiterSide.WithContext(ctx, name)
		granted <- time.Now()
		waitErr <- err
		if cancel != nil {
			cancel()
		}
	}()
	select {
	case <-spy.refused: // the waiter tried, and now waits
	case <-ctx.Done():
		t.Fatal("the waiter never tried")
	}
	released := time.Now()
	release()
	<-held.Done()
	at := <-granted
	if err := <-waitErr; err != nil {
		t.Fatalf("waiting WithContext through A: %v", err)
	}
	woke := at.Sub(released)
	t.Logf("rueidislock waiter granted %v after the release through the other side", woke)
	if woke > validity/3 {
		t.Fatalf("waiter granted %v after the release: not woken by an invalidation", woke)
	}

	// TryWithContext gets a free lock at once.
	tctx, tcancel, err := waiterSide.TryWithContext(ctx, name+":try")
	if err != nil {
		t.Fatalf("TryWithContext of a free lock: %v", err)
	}
	tcancel()
	<-tctx.Done()

	// Keys that expire (extended only after an hour) lose the lock: the
	// holder's context ends on the invalidation of its keys.
	shortSide := newLocker(t, addrA, 500*time.Millisecond, time.Hour, &triesSpy{noLoop: noLoop})
	lost, cancel, err := shortSide.WithContext(ctx, name+":short")
	if err != nil {
		t.Fatalf("WithContext of the short lock: %v", err)
	}
	defer cancel()
	took := time.Now()
	select {
	case <-lost.Done():
		t.Logf("lock lost %v after it was taken (validity 500ms)", time.Since(took))
	case <-ctx.Done():
		t.Fatal("the lock's context was not cancelled when its keys expired")
	}
}

// TestRueidisLockNoLoop runs the scenario of TestRueidisLock with
// NoLoopTracking (CLIENT TRACKING ON OPTOUT NOLOOP): the waiter is still
// woken by the release through the other side and the holder still loses
// the lock when its keys expire, on one redis-server and across two
// redlockd proxies; and a holder is not told of its own acquire and
// extensions, so it extends on its interval only (on Redis as through
// redlockd), where without NOLOOP it answers each invalidation of its own
// change with another extension.
func TestRueidisLockNoLoop(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		rueidisLockScenario(t, tg.addr, tg.other, len(tg.backends), true)

		ctx := testCtx(t)
		spy := &triesSpy{noLoop: true}
		holder := newLocker(t, tg.addr, validity, time.Hour, spy)
		held, release, err := holder.WithContext(ctx, "noloop")
		if err != nil {
			t.Fatalf("WithContext: %v", err)
		}
		// Its own acquire is reported by every backend within
		// milliseconds; a holder told of it would have extended by then,
		// and would go on extending.
		time.Sleep(300 * time.Millisecond)
		if n := spy.extends.Load(); n != 0 {
			t.Errorf("the holder extended %d times within 300ms of its acquire (interval an hour): told of its own changes", n)
		}
		// A change by another client is still told: a forced take-over
		// through the other side ends the holder's context.
		// Each key's round may take longer than the locker's default
		// 20ms try of one key on a loaded machine.
		other, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: []string{tg.other}, DisableRetry: true},
			KeyValidity:  validity, ExtendInterval: time.Hour, TryNextAfter: 5 * time.Second, NoLoopTracking: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(other.Close)
		_, cancel, err := other.ForceWithContext(ctx, "noloop")
		if err != nil {
			t.Fatalf("ForceWithContext through the other side: %v", err)
		}
		defer cancel()
		select {
		case <-held.Done():
		case <-ctx.Done():
			t.Fatal("the holder was not told that another client took its lock over")
		}
		release()
	})
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestRedsyncRueidis runs go-redsync over its rueidis pool, with rueidis's
// client-side caching on, through two redlockd proxies: lock, extend,
// unlock, and contention between the proxies.
func TestRedsyncRueidis(t *testing.T) {
	a := startRedlockd(t)
	b := startSecond(t, a)
	ctx := testCtx(t)
	pool := func(addr string) *redsync.Redsync {
		c := newRueidis(t, addr, rueidis.ClientOption{})
		return redsync.New(redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
	}
	rsA, rsB := pool(a.Addr), pool(b.Addr)
	const name = "redsync:rueidis"
	m := rsA.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("Lock through A: %v", err)
	}
	other := rsB.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(2),
		redsync.WithRetryDelay(10*time.Millisecond))
	var taken *redsync.ErrTaken
	if err := other.LockContext(ctx); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
		t.Fatalf("Lock through B while A holds: err = %v, want ErrFailed or ErrTaken", err)
	}
	before := m.Until()
	if ok, err := m.ExtendContext(ctx); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	if !m.Until().After(before) {
		t.Fatalf("Extend did not move Until")
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("Unlock = %v, %v", ok, err)
	}
	if err := other.LockContext(ctx); err != nil {
		t.Fatalf("Lock through B after the release: %v", err)
	}
	if ok, _ := m.UnlockContext(ctx); ok {
		t.Fatal("stale Unlock through A reported success")
	}
	if ok, err := other.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("Unlock through B = %v, %v", ok, err)
	}
}
