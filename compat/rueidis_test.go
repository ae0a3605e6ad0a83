package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// invalidations records the keys of the invalidation pushes a rueidis
// client gets (a nil message list, a flush, is recorded as "*").
type invalidations chan string

func (ch invalidations) on(msgs []rueidis.RedisMessage) {
	if msgs == nil {
		ch <- "*"
		return
	}
	for _, m := range msgs {
		k, _ := m.ToString()
		ch <- k
	}
}

// waitFor waits until key is reported.
func (ch invalidations) waitFor(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	for {
		select {
		case k := <-ch:
			if k == key {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no invalidation of %q: %v", key, ctx.Err())
		}
	}
}

func newRueidis(t testing.TB, addr string, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	opt.InitAddress = []string{addr}
	opt.DisableRetry = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRueidis runs rueidis unchanged, with client-side caching on (its
// default) and off, against one redis-server and then across two
// redlockd proxies over the same three backends: a cached GET is
// invalidated when the lock is released through the other proxy and
// when its ttl runs out.
func TestRueidis(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		rueidisScenario(t, tg.addr, tg.other, len(tg.backends))
	})
}

// warmTracking turns tracking on at addrA (the backends then start
// reporting, each with a flush first) and waits until each of the nodes
// has reported changes made through addrB to keys of every shard (32
// keys spread over the slots): from then on an invalidation is a key's
// own, not a flush.
func warmTracking(t testing.TB, ctx context.Context, addrA, addrB string, nodes int) {
	t.Helper()
	inv := make(invalidations, 4096)
	newRueidis(t, addrA, rueidis.ClientOption{OnInvalidations: inv.on,
		ClientTrackingOptions: []string{"BCAST", "PREFIX", "warm:"}})
	w := newRueidis(t, addrB, rueidis.ClientOption{DisableCache: true})
	for round := 0; ; round++ {
		copies := map[string]int{}
		for i := range 32 {
			key := fmt.Sprintf("warm:%d:%d", round, i)
			copies[key] = 0
			if err := w.Do(ctx, w.B().Set().Key(key).Value("x").Nx().PxMilliseconds(60000).Build()).Error(); err != nil {
				t.Fatalf("SET %s: %v", key, err)
			}
		}
		if warmRound(t, ctx, inv, copies, nodes) {
			return
		}
	}
}

// warmRound waits for nodes copies of each key's invalidation; false
// when a flush came first (a node's reports were just starting).
func warmRound(t testing.TB, ctx context.Context, inv invalidations, copies map[string]int, nodes int) bool {
	t.Helper()
	left := len(copies)
	for left > 0 {
		var k string
		select {
		case k = <-inv:
		case <-ctx.Done():
			t.Fatalf("warming tracking up: %v", ctx.Err())
		}
		if k == "*" {
			return false
		}
		if n, ok := copies[k]; ok {
			copies[k] = n + 1
			if n+1 == nodes {
				left--
			}
		}
	}
	return true
}

func rueidisScenario(t *testing.T, addrA, addrB string, nodes int) {
	ctx := testCtx(t)
	warmTracking(t, ctx, addrA, addrB, nodes)
	inv := make(invalidations, 64)
	cached := newRueidis(t, addrA, rueidis.ClientOption{OnInvalidations: inv.on})
	other := newRueidis(t, addrB, rueidis.ClientOption{DisableCache: true})
	plain := newRueidis(t, addrA, rueidis.ClientOption{DisableCache: true})
	// A broadcast client on A hears each node's report of a change, so
	// the test knows when A has heard them all.
	seen := make(invalidations, 64)
	newRueidis(t, addrA, rueidis.ClientOption{OnInvalidations: seen.on,
		ClientTrackingOptions: []string{"BCAST", "PREFIX", "rueidis:"}})

	const key = "rueidis:orders"
	// A long ttl and a long client-side ttl: only an invalidation can
	// end the cached read within the test's time.
	if err := other.Do(ctx, other.B().Set().Key(key).Value("tok-1").Nx().PxMilliseconds(60000).Build()).Error(); err != nil {
		t.Fatalf("SET NX PX through the other proxy: %v", err)
	}
	// Each node reports the write after B's reply, in its own time: the
	// reads below start once A has heard every copy, so that a late copy
	// cannot end the cached read it is not about.
	for range nodes {
		seen.waitFor(t, ctx, key)
	}
	if err := cached.Do(ctx, cached.B().Set().Key(key).Value("tok-2").Nx().PxMilliseconds(60000).Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("second SET NX PX: err = %v, want nil reply", err)
	}
	get := func() rueidis.Cacheable { return cached.B().Get().Key(key).Cache() }
	r := cached.DoCache(ctx, get(), time.Minute)
	if v, err := r.ToString(); err != nil || v != "tok-1" || r.IsCacheHit() {
		t.Fatalf("first cached GET = %q, %v (hit %v)", v, err, r.IsCacheHit())
	}
	r = cached.DoCache(ctx, get(), time.Minute)
	if v, err := r.ToString(); err != nil || v != "tok-1" || !r.IsCacheHit() {
		t.Fatalf("second cached GET = %q, %v (hit %v), want a cache hit", v, err, r.IsCacheHit())
	}
	if got, _ := plain.Do(ctx, plain.B().Get().Key(key).Build()).ToString(); got != "tok-1" {
		t.Fatalf("uncached GET = %q", got)
	}

	// Released through the other proxy: the cached read learns it.
	if err := other.Do(ctx, other.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatalf("DEL through the other proxy: %v", err)
	}
	inv.waitFor(t, ctx, key)
	r = cached.DoCache(ctx, get(), time.Minute)
	if !rueidis.IsRedisNil(r.Error()) || r.IsCacheHit() {
		t.Fatalf("cached GET after the release = %v (hit %v), want a fresh nil", r.Error(), r.IsCacheHit())
	}

	// Taken again, read, and left to expire: the expiry invalidates it.
	const short = "rueidis:short"
	if err := other.Do(ctx, other.B().Set().Key(short).Value("tok-3").Nx().PxMilliseconds(300).Build()).Error(); err != nil {
		t.Fatalf("SET NX PX 300: %v", err)
	}
	if v, err := cached.DoCache(ctx, cached.B().Get().Key(short).Cache(), time.Minute).ToString(); err != nil || v != "tok-3" {
		// The key may have expired before the read on a slow machine.
		if !rueidis.IsRedisNil(err) {
			t.Fatalf("cached GET of the short lock = %q, %v", v, err)
		}
		return
	}
	inv.waitFor(t, ctx, short)
}

// TestRueidisConnectOptions: rueidis's whole connect sequence (HELLO 3
// with AUTH and SETNAME, CLIENT TRACKING with rueidislock's OPTOUT
// NOLOOP, SELECT, CLIENT NO-TOUCH and NO-EVICT, CLIENT
// SETINFO) is answered as Redis 7 answers it, so the client connects and
// its options hold.
func TestRueidisConnectOptions(t *testing.T) {
	opts := harnessOptions
	opts.Commands.Password = "pw"
	in := &instance{redlocktest.Start(t, opts)}
	ctx := testCtx(t)
	c := newRueidis(t, in.Addr, rueidis.ClientOption{
		Password:              "pw",
		ClientName:            "orders-svc",
		SelectDB:              3,
		ClientNoTouch:         true,
		ClientNoEvict:         true,
		ClientTrackingOptions: []string{"OPTOUT", "NOLOOP"},
	})
	if err := c.Do(ctx, c.B().Set().Key("conn:k").Value("tok").Nx().PxMilliseconds(10000).Build()).Error(); err != nil {
		t.Fatalf("SET NX PX: %v", err)
	}
	info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	for _, want := range []string{"name=orders-svc", "db=3", "resp=3", "lib-name=rueidis"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO %q lacks %q", info, want)
		}
	}
	flags, err := c.Do(ctx, c.B().ClientTrackinginfo().Build()).AsMap()
	if err != nil {
		t.Fatalf("CLIENT TRACKINGINFO: %v", err)
	}
	fl := flags["flags"]
	if got, _ := fl.AsStrSlice(); strings.Join(got, " ") != "on optout noloop" {
		t.Fatalf("tracking flags = %q", got)
	}
	if n := redlocktest.Count(redlocktest.ValuesIn(t, in.Backends, 3, "conn:k"), "tok"); n < 2 {
		t.Fatalf("the lock is in db 3 of %d backends, want a majority", n)
	}
}

// TestRueidisNoLoop: a rueidis client tracking with NOLOOP (OPTOUT NOLOOP,
// as rueidislock's NoLoopTracking) is not told of its own write of a key
// it cached, on one redis-server as through redlockd over three backends,
// so its cached read stays a hit; a change through the other side is
// told.
func TestRueidisNoLoop(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		ctx := testCtx(t)
		warmTracking(t, ctx, tg.addr, tg.other, len(tg.backends))
		inv := make(invalidations, 64)
		// One connection: NOLOOP is a connection's, and rueidis spreads
		// its commands over several unless told not to (as rueidislock
		// tells it).
		a := newRueidis(t, tg.addr, rueidis.ClientOption{OnInvalidations: inv.on,
			ClientTrackingOptions: []string{"OPTOUT", "NOLOOP"}, PipelineMultiplex: -1})
		other := newRueidis(t, tg.other, rueidis.ClientOption{DisableCache: true})
		seen := make(invalidations, 64)
		newRueidis(t, tg.addr, rueidis.ClientOption{OnInvalidations: seen.on,
			ClientTrackingOptions: []string{"BCAST", "PREFIX", "noloop:"}})

		const key = "noloop:k"
		if err := other.Do(ctx, other.B().Set().Key(key).Value("tok-1").PxMilliseconds(60000).Build()).Error(); err != nil {
			t.Fatalf("SET through the other side: %v", err)
		}
		for range len(tg.backends) {
			seen.waitFor(t, ctx, key)
		}
		get := func() rueidis.Cacheable { return a.B().Get().Key(key).Cache() }
		if v, err := a.DoCache(ctx, get(), time.Minute).ToString(); err != nil || v != "tok-1" {
			t.Fatalf("cached GET = %q, %v", v, err)
		}
		// Its own write: every backend reports it, and none is told to
		// the NOLOOP client; its cached read stays (stale, as on Redis).
		if err := a.Do(ctx, a.B().Set().Key(key).Value("tok-2").PxMilliseconds(60000).Build()).Error(); err != nil {
			t.Fatalf("own SET: %v", err)
		}
		for range len(tg.backends) {
			seen.waitFor(t, ctx, key)
		}
		time.Sleep(300 * time.Millisecond) // a report told would have arrived by now
		r := a.DoCache(ctx, get(), time.Minute)
		if v, err := r.ToString(); err != nil || v != "tok-1" || !r.IsCacheHit() {
			t.Fatalf("cached GET after its own SET = %q, %v (hit %v): told of its own write", v, err, r.IsCacheHit())
		}
		// Its own write in a transaction (run on the backends as one
		// script): left out too.
		for i, r := range a.DoMulti(ctx, a.B().Multi().Build(),
			a.B().Set().Key(key).Value("tok-4").PxMilliseconds(60000).Build(), a.B().Exec().Build()) {
			if err := r.Error(); err != nil {
				t.Fatalf("own MULTI … EXEC, reply %d: %v", i, err)
			}
		}
		for range len(tg.backends) {
			seen.waitFor(t, ctx, key)
		}
		time.Sleep(300 * time.Millisecond)
		r = a.DoCache(ctx, get(), time.Minute)
		if v, err := r.ToString(); err != nil || v != "tok-1" || !r.IsCacheHit() {
			t.Fatalf("cached GET after its own MULTI … EXEC = %q, %v (hit %v): told of its own write", v, err, r.IsCacheHit())
		}
		if tg.name == redlockdTarget {
			// redlockd's own LOCK with a TOKEN: the token is what it
			// leaves, so it is left out as well (docs/commands.md).
			const lk = "noloop:lock"
			lget := func() rueidis.Cacheable { return a.B().Get().Key(lk).Cache() }
			if err := a.DoCache(ctx, lget(), time.Minute).Error(); !rueidis.IsRedisNil(err) {
				t.Fatalf("cached GET of a free lock: %v", err)
			}
			if err := a.Do(ctx, a.B().Arbitrary("LOCK").Keys(lk).Args("60000", "TOKEN", "tok-L").Build()).Error(); err != nil {
				t.Fatalf("own LOCK … TOKEN: %v", err)
			}
			for range len(tg.backends) {
				seen.waitFor(t, ctx, lk)
			}
			time.Sleep(300 * time.Millisecond)
			if r := a.DoCache(ctx, lget(), time.Minute); !rueidis.IsRedisNil(r.Error()) || !r.IsCacheHit() {
				t.Fatalf("cached GET after its own LOCK … TOKEN = %v (hit %v): told of its own write", r.Error(), r.IsCacheHit())
			}
		}
		// Read afresh (as the client does after any invalidation), then
		// changed through the other side: told.
		if err := a.Do(ctx, a.B().Get().Key(key).Build()).Error(); err != nil {
			t.Fatalf("GET: %v", err)
		}
		if err := other.Do(ctx, other.B().Set().Key(key).Value("tok-3").PxMilliseconds(60000).Build()).Error(); err != nil {
			t.Fatalf("SET through the other side: %v", err)
		}
		inv.waitFor(t, ctx, key)
	})
}
