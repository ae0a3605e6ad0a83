package e2e

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/childproc"
	"github.com/redlockd/redlockd/testkit/redistest"
	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// permit takes LOCK key ttl PERMITS n [more…] and returns its token.
func permit(t *testing.T, c doer, key string, n int, more ...any) string {
	t.Helper()
	tok, _ := lock(t, c, append([]any{key, 60000, "PERMITS", n}, more...)...)
	if !quorum.IsPermitToken(tok) {
		t.Fatalf("LOCK %s PERMITS %d: token %q is not a permit's", key, n, tok)
	}
	return tok
}

// wantLockNull checks that c's LOCK args is refused with a null (contention).
func wantLockNull(t *testing.T, c doer, args ...any) {
	t.Helper()
	if err := c.Do(ctxT(t), append([]any{"LOCK"}, args...)...).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK %v = %v, want null", args, err)
	}
}

// permitSlotValues reads slot of key's semaphore on every backend.
func permitSlotValues(t *testing.T, backends []*redistest.Server, db int, key string, slot int) []string {
	t.Helper()
	return redlocktest.ValuesIn(t, backends, db, quorum.PermitSlotKey(key, slot))
}

func permitSlot(t *testing.T, tok string) int {
	t.Helper()
	_, slot, ok := quorum.ParsePermitToken(tok)
	if !ok {
		t.Fatalf("%q is not a permit token", tok)
	}
	return slot
}

// Two proxies in front of the same backends share one semaphore: the
// bound, the marker that keeps exclusive locks out, the n that must
// match, RENEW and UNLOCK through the other proxy.
func TestPermitsAcrossTwoProxies(t *testing.T) {
	backends := redistest.StartN(t, 3)
	a := redlocktest.StartOver(t, backends, redlocktest.Options{}).Client(t, 2)
	b := redlocktest.StartOver(t, backends, redlocktest.Options{}).Client(t, 3)
	ta := permit(t, a, "sem", 2)
	tb := permit(t, b, "sem", 2)
	if permitSlot(t, ta) == permitSlot(t, tb) {
		t.Fatalf("two permits on one slot: %s %s", ta, tb)
	}
	wantLockNull(t, a, "sem", 60000, "PERMITS", 2)
	wantLockNull(t, b, "sem", 60000)
	if err := a.SetNX(ctxT(t), "sem", "x", time.Minute).Err(); err != nil {
		t.Fatalf("SET NX on a semaphore's key: %v", err)
	}
	err := b.Do(ctxT(t), "LOCK", "sem", 60000, "PERMITS", 3).Err()
	if err == nil || err.Error() != "ERR PERMITS 3 does not match the 2 permits key holds" {
		t.Fatalf("LOCK PERMITS 3 on a key of 2 permits: %v", err)
	}
	if vals := redlocktest.ValuesIn(t, backends, 0, "sem"); redlocktest.Count(vals, quorum.PermitsMarker(2)) != 3 {
		t.Fatalf("the key holds %v on the backends, want the marker everywhere", vals)
	}
	if vals := permitSlotValues(t, backends, 0, "sem", permitSlot(t, ta)); redlocktest.Count(vals, ta) != 3 {
		t.Fatalf("A's slot holds %v, want its token everywhere", vals)
	}
	if v, err := b.Do(ctxT(t), "RENEW", "sem", ta, 90000).Int64(); err != nil || v <= 60000 {
		t.Fatalf("RENEW of A's permit through B = %v, %v", v, err)
	}
	if n, err := b.Do(ctxT(t), "UNLOCK", "sem", ta).Int64(); err != nil || n != 1 {
		t.Fatalf("UNLOCK of A's permit through B = %v, %v", n, err)
	}
	permit(t, a, "sem", 2)
	lock(t, a, "excl", 60000)
	wantLockNull(t, b, "excl", 60000, "PERMITS", 3)
}

// The last permit's release frees the key for an exclusive lock, and
// leaves nothing on the backends.
func TestPermitsReleaseLeavesNothing(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	t1, t2 := permit(t, c, "gone", 3), permit(t, c, "gone", 3)
	pipe := c.Pipeline()
	u1 := pipe.Do(ctxT(t), "UNLOCK", "gone", t1)
	u2 := pipe.Do(ctxT(t), "UNLOCK", "gone", t2)
	if _, err := pipe.Exec(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*redis.Cmd{u1, u2} {
		if n, err := u.Int64(); err != nil || n != 1 {
			t.Fatalf("pipelined UNLOCK of a permit = %v, %v", n, err)
		}
	}
	for slot := range 3 {
		if vals := permitSlotValues(t, in.Backends, 0, "gone", slot); redlocktest.Count(vals, "<nil>") != 3 {
			t.Fatalf("slot %d holds %v after its release", slot, vals)
		}
	}
	if vals := in.BackendValues(t, "gone"); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("the key holds %v after the last release", vals)
	}
	lock(t, c, "gone", 60000)
}

// A waiter for a permit on one proxy is woken by a release on the other,
// well before its retry jitter would have tried again.
func TestPermitWaitWokenByOtherProxy(t *testing.T) {
	backends := redistest.StartN(t, 3)
	first := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	second := redlocktest.StartOver(t, backends, redlocktest.Options{Quorum: slowRetries})
	holder := first.Client(t, 2)
	tok := permit(t, holder, "wsem", 1)
	ch := make(chan lockReply, 1)
	waiter := blockingClient(t, second.Client(t, 2))
	go func() {
		res, err := waiter.Do(ctxT(t), "LOCK", "wsem", 60000, "PERMITS", 1, "WAIT", 3*slowJitter.Milliseconds()).Slice()
		ch <- lockReply{res, err, time.Now()}
	}()
	wk := "redlockd:wait:{wsem}"
	pollFor(t, "the waiter's marked round", func() bool {
		return redlocktest.Count(redlocktest.ValuesIn(t, backends, 0, wk), "<nil>") == 0
	})
	released := time.Now()
	if n, err := holder.Do(ctxT(t), "UNLOCK", "wsem", tok).Int64(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	r := <-ch
	if r.err != nil || len(r.res) != 2 {
		t.Fatalf("LOCK PERMITS WAIT = %v, %v; want a permit", r.res, r.err)
	}
	if d := r.at.Sub(released); d > wakeBound {
		t.Errorf("waiter got the permit %v after the release; its retry jitter is %v, so it was not woken", d, slowJitter)
	}
}

// KEEPALIVE renews a permit past its ttl and releases it when the
// connection closes.
func TestPermitKeepalive(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 2, PoolSize: 1})
	tok, _ := lock(t, c, "ksem", 300, "PERMITS", 2, "KEEPALIVE")
	sk := quorum.PermitSlotKey("ksem", permitSlot(t, tok))
	direct := in.Backends[0].Client()
	// Renewed: the slot's ttl goes back up at least twice, so it outlives
	// its 300ms.
	last, rises := int64(300), 0
	deadline := time.Now().Add(10 * time.Second)
	for rises < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the permit was not renewed")
		}
		p, err := direct.PTTL(ctxT(t), sk).Result()
		if err != nil || p < 0 {
			t.Fatalf("the slot is gone (%v, %v): not renewed", p, err)
		}
		if ms := p.Milliseconds(); ms > last {
			rises++
			last = ms
		} else {
			last = ms
		}
		time.Sleep(20 * time.Millisecond) // pacing the polls
	}
	c.Close()
	pollFor(t, "the permit released on hang-up", func() bool {
		return redlocktest.Count(redlocktest.ValuesIn(t, in.Backends, 0, sk), "<nil>") == 3
	})
}

// A kept permit is put back on a backend that lost it (its data flushed,
// as a restart without persistence would), slot and marker both.
func TestPermitKeepaliveRestores(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	tok, _ := lock(t, c, "rsem", 600, "PERMITS", 2, "KEEPALIVE")
	if err := in.Backends[0].Client().FlushAll(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	sk := quorum.PermitSlotKey("rsem", permitSlot(t, tok))
	pollFor(t, "the permit restored on the flushed backend", func() bool {
		return redlocktest.ValuesIn(t, in.Backends[:1], 0, sk)[0] == tok &&
			redlocktest.ValuesIn(t, in.Backends[:1], 0, "rsem")[0] == quorum.PermitsMarker(2)
	})
}

// FENCE on a permit counts per slot: the next holder of the slot gets a
// greater fence.
func TestPermitFence(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	var last int64
	for i := range 3 {
		res, err := c.Do(ctxT(t), "LOCK", "fsem", 60000, "PERMITS", 1, "FENCE").Slice()
		if err != nil || len(res) != 3 {
			t.Fatalf("LOCK PERMITS FENCE = %v, %v", res, err)
		}
		f, _ := res[2].(int64)
		if f <= last {
			t.Fatalf("fence %d after %d (round %d)", f, last, i)
		}
		last = f
		if n, err := c.Do(ctxT(t), "UNLOCK", "fsem", res[0]).Int64(); err != nil || n != 1 {
			t.Fatalf("UNLOCK = %v, %v", n, err)
		}
	}
}

// A semaphore lives in the connection's database; LOCKINFO counts its
// permits.
func TestPermitsSelectAndLockInfo(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := redis.NewClient(&redis.Options{Addr: in.Addr, Protocol: 3, DB: 3})
	defer c.Close()
	permit(t, c, "dsem", 2)
	permit(t, c, "dsem", 2)
	if vals := redlocktest.ValuesIn(t, in.Backends, 3, "dsem"); redlocktest.Count(vals, quorum.PermitsMarker(2)) != 3 {
		t.Fatalf("db 3 holds %v", vals)
	}
	lock(t, in.Client(t, 2), "dsem", 60000) // db 0: another key
	info, err := c.Do(ctxT(t), "LOCKINFO", "dsem").Result()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := info.(map[any]any)
	if !ok {
		t.Fatalf("LOCKINFO = %#v", info)
	}
	if m["holds"] != int64(2) || m["token"] != quorum.PermitsMarker(2) {
		t.Fatalf("LOCKINFO holds %v, token %v; want 2 permits", m["holds"], m["token"])
	}
}

// redis-cli takes and releases a permit through the proxy.
func TestPermitsRedisCLI(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	cli := func(args ...string) []string {
		t.Helper()
		out, err := childproc.Output(childproc.Command("redis-cli", append([]string{"-p", strconv.Itoa(in.Port)}, args...)...))
		if err != nil {
			t.Fatalf("redis-cli %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	got := cli("LOCK", "csem", "60000", "PERMITS", "1")
	if len(got) != 2 || !quorum.IsPermitToken(got[0]) {
		t.Fatalf("redis-cli LOCK PERMITS printed %q", got)
	}
	if again := cli("LOCK", "csem", "60000", "PERMITS", "1"); len(again) != 1 || again[0] != "" {
		t.Fatalf("a second permit of one printed %q", again)
	}
	if out := cli("UNLOCK", "csem", got[0]); fmt.Sprint(out) != "[1]" {
		t.Fatalf("redis-cli UNLOCK printed %q", out)
	}
}

// The proxy chooses permit tokens: a client's TOKEN of that form is
// refused, and so are out-of-range counts.
func TestPermitsBadArguments(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	for _, args := range [][]any{
		{"LOCK", "b", 1000, "TOKEN", quorum.NewPermitToken(2, 0)},
		{"LOCK", "b", 1000, "PERMITS", 0},
		{"LOCK", "b", 1000, "PERMITS", 1001},
	} {
		if err := c.Do(ctxT(t), args...).Err(); err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("%v = %v, want an error", args, err)
		}
	}
}

// A permit waiter whose client hangs up stops waiting at once and takes
// nothing: the permit released afterwards is free for the next client.
func TestPermitWaiterHangsUp(t *testing.T) {
	in := redlocktest.Start(t, redlocktest.Options{})
	c := in.Client(t, 2)
	tok := permit(t, c, "hsem", 1)
	conn, err := net.Dial("tcp", in.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "LOCK hsem 60000 PERMITS 1 WAIT 3600000\r\n")
	pollFor(t, "the permit waiter", func() bool { return in.Cluster.Waiters("hsem") == 1 })
	conn.Close()
	pollFor(t, "the wait to end", func() bool { return in.Cluster.Waiters("hsem") == 0 })
	if n, err := c.Do(ctxT(t), "UNLOCK", "hsem", tok).Int64(); err != nil || n != 1 {
		t.Fatalf("UNLOCK = %v, %v", n, err)
	}
	if vals := permitSlotValues(t, in.Backends, 0, "hsem", 0); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("the slot holds %v after the release: taken by the waiter that left", vals)
	}
	permit(t, c, "hsem", 1)
}

// The key of a semaphore holding 2 of 3 permits: GET answers the marker,
// PTTL covers the longest permit and is not shortened by a RENEW to a
// shorter ttl, and a DEL of the key removes the marker only: the permits
// keep their slots, so the bound still counts them and their tokens still
// release.
func TestPermitsKeyMarker(t *testing.T) {
	backends := redistest.StartN(t, 3)
	c := redlocktest.StartOver(t, backends, redlocktest.Options{}).Client(t, 2)
	ctx := ctxT(t)
	short, vShort := lock(t, c, "sem", 90000, "PERMITS", 3)
	tShort := time.Now()
	long, vLong := lock(t, c, "sem", 120000, "PERMITS", 3)
	tLong := time.Now()
	if permitSlot(t, short) == permitSlot(t, long) {
		t.Fatalf("two permits on one slot: %s %s", short, long)
	}
	if v, err := c.Get(ctx, "sem").Result(); err != nil || v != quorum.PermitsMarker(3) || v != "redlockd:permits:3" {
		t.Fatalf("GET of a semaphore's key = %q, %v; want redlockd:permits:3", v, err)
	}
	// The marker lives at least as long as the longest permit.
	p, err := c.PTTL(ctx, "sem").Result()
	if err != nil || p <= 0 {
		t.Fatalf("PTTL of a semaphore's key = %v, %v", p, err)
	}
	if floor := time.Duration(vLong)*time.Millisecond - time.Since(tLong) - 500*time.Millisecond; p < floor {
		t.Fatalf("PTTL %v is shorter than the longest permit's validity left (%v)", p, floor)
	}
	before, tBefore := p, time.Now()
	// The longest permit renewed to a much shorter ttl: the marker's ttl
	// is not shortened, so still covers the other permit.
	if v, err := c.Do(ctx, "RENEW", "sem", long, 30000).Int64(); err != nil || v <= 0 || v > 30000 {
		t.Fatalf("RENEW of a permit to 30000 = %d, %v", v, err)
	}
	p, err = c.PTTL(ctx, "sem").Result()
	if err != nil {
		t.Fatal(err)
	}
	if floor := time.Duration(vShort)*time.Millisecond - time.Since(tShort) - 500*time.Millisecond; p < floor {
		t.Fatalf("PTTL after RENEW of one permit to 30s = %v; the other permit's validity left is %v", p, floor)
	}
	if floor := before - time.Since(tBefore) - 500*time.Millisecond; p < floor {
		t.Errorf("PTTL after RENEW to a shorter ttl = %v, was %v: shortened", p, before)
	}
	// DEL acts on the marker only.
	if n, err := c.Del(ctx, "sem").Result(); err != nil || n != 1 {
		t.Fatalf("DEL of a semaphore's key = %d, %v", n, err)
	}
	if err := c.Get(ctx, "sem").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after DEL = %v, want null", err)
	}
	for _, tok := range []string{short, long} {
		if vals := permitSlotValues(t, backends, 0, "sem", permitSlot(t, tok)); redlocktest.Count(vals, tok) != 3 {
			t.Fatalf("after DEL %s's slot holds %v on the backends, want its token everywhere", tok, vals)
		}
	}
	third := permit(t, c, "sem", 3)
	if s := permitSlot(t, third); s == permitSlot(t, short) || s == permitSlot(t, long) {
		t.Fatalf("after DEL a permit got slot %d of a permit still held (%s, %s)", s, short, long)
	}
	wantLockNull(t, c, "sem", 60000, "PERMITS", 3)
	if v, err := c.Do(ctx, "UNLOCK", "sem", short).Int64(); err != nil || v != 1 {
		t.Fatalf("UNLOCK of a permit held across the DEL = %d, %v; want 1", v, err)
	}
	if v, err := c.Do(ctx, "UNLOCK", "sem", long).Int64(); err != nil || v != 1 {
		t.Fatalf("UNLOCK of the renewed permit held across the DEL = %d, %v; want 1", v, err)
	}
}

// TestPermitsKeyMarkerReleaseExpireSet: a permit's release lowers the
// marker's PTTL to the longest permit left; a PEXPIRE or a forced SET of
// the key acts on the marker only: the permits keep their slots, and a
// permit's UNLOCK still answers 1.
func TestPermitsKeyMarkerReleaseExpireSet(t *testing.T) {
	backends := redistest.StartN(t, 3)
	c := redlocktest.StartOver(t, backends, redlocktest.Options{}).Client(t, 2)
	ctx := ctxT(t)
	short, _ := lock(t, c, "sem", 30000, "PERMITS", 3)
	long, _ := lock(t, c, "sem", 120000, "PERMITS", 3)
	if p, err := c.PTTL(ctx, "sem").Result(); err != nil || p <= 30*time.Second {
		t.Fatalf("PTTL with a permit of 120 s = %v, %v; want longer than the shorter permit's 30 s", p, err)
	}
	if v, err := c.Do(ctx, "UNLOCK", "sem", long).Int64(); err != nil || v != 1 {
		t.Fatalf("UNLOCK of the longer permit = %d, %v", v, err)
	}
	if p, err := c.PTTL(ctx, "sem").Result(); err != nil || p <= 0 || p > 30*time.Second {
		t.Fatalf("PTTL after the longer permit's release = %v, %v; want at most the shorter permit's 30 s", p, err)
	}
	slot := permitSlot(t, short)
	holds := func(step string) {
		t.Helper()
		if vals := permitSlotValues(t, backends, 0, "sem", slot); redlocktest.Count(vals, short) != 3 {
			t.Fatalf("after %s the permit's slot holds %v on the backends, want its token everywhere", step, vals)
		}
	}
	if ok, err := c.PExpire(ctx, "sem", 90*time.Second).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE of a semaphore's key = %v, %v", ok, err)
	}
	if p, err := c.PTTL(ctx, "sem").Result(); err != nil || p <= 30*time.Second {
		t.Fatalf("PTTL after PEXPIRE 90 s = %v, %v; want the marker's new ttl", p, err)
	}
	holds("PEXPIRE")
	if err := c.Set(ctx, "sem", "x", time.Minute).Err(); err != nil {
		t.Fatalf("forced SET of a semaphore's key: %v", err)
	}
	if v, err := c.Get(ctx, "sem").Result(); err != nil || v != "x" {
		t.Fatalf("GET after the forced SET = %q, %v; want x", v, err)
	}
	holds("a forced SET")
	if v, err := c.Do(ctx, "UNLOCK", "sem", short).Int64(); err != nil || v != 1 {
		t.Fatalf("UNLOCK of a permit held across PEXPIRE and SET = %d, %v; want 1", v, err)
	}
	if vals := permitSlotValues(t, backends, 0, "sem", slot); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("the slot holds %v after the release", vals)
	}
}
