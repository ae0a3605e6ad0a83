package compat

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redisson (Java) cannot run here, so TestRedissonRLock replays what its
// RLock sends, byte for byte: the lock, unlock and watchdog renewal
// scripts of Redisson 3.52.0 (testdata/redisson/*.lua), with the KEYS and
// ARGV Redisson passes, over RESP2 (Redisson's default protocol) and RESP3
// (its protocol option; pub/sub messages then arrive as push messages).

// redissonScript is one script of testdata/redisson: its first line names
// the Redisson version and source file, the rest is the script.
type redissonScript struct {
	body, sha string
}

func loadRedissonScript(t *testing.T, name string) redissonScript {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "redisson", name+".lua"))
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(raw), "\n")
	if !ok || !strings.HasPrefix(head, "-- Redisson ") {
		t.Fatalf("%s.lua: the first line must name the Redisson version", name)
	}
	body = strings.TrimSuffix(body, "\n")
	sum := sha1.Sum([]byte(body))
	return redissonScript{body: body, sha: hex.EncodeToString(sum[:])}
}

// redisson is one Redisson client instance: its id (a UUID, the prefix of
// every lock field) and whether its script cache is on (the default:
// EVALSHA, and on NOSCRIPT, SCRIPT LOAD then EVALSHA again, as its
// CommandAsyncService does) or off (plain EVAL).
type redisson struct {
	c       *redis.Client
	id      string
	cache   bool
	scripts map[string]redissonScript
}

func newRedisson(t *testing.T, addr string, protocol int, cache bool, scripts map[string]redissonScript) *redisson {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return &redisson{c: c, id: randomHex(16), cache: cache, scripts: scripts}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// eval runs the named script; a nil reply is (nil, nil).
func (r *redisson) eval(ctx context.Context, name string, keys []string, args ...any) (any, error) {
	s := r.scripts[name]
	var v any
	var err error
	if r.cache {
		v, err = r.c.EvalSha(ctx, s.sha, keys, args...).Result()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			if err = r.c.ScriptLoad(ctx, s.body).Err(); err == nil {
				v, err = r.c.EvalSha(ctx, s.sha, keys, args...).Result()
			}
		}
	} else {
		v, err = r.c.Eval(ctx, s.body, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// rlock is one RLock of one Redisson instance, used from one thread.
type rlock struct {
	r        *redisson
	name     string
	threadID int
	leaseMS  int64
}

func (l rlock) field() string   { return fmt.Sprintf("%s:%d", l.r.id, l.threadID) }
func (l rlock) channel() string { return "redisson_lock__channel:{" + l.name + "}" }

// tryLock is tryLockInnerAsync: nil when acquired (or re-entered), else
// the holder's PTTL.
func (l rlock) tryLock(ctx context.Context) (any, error) {
	return l.r.eval(ctx, "lock", []string{l.name}, l.leaseMS, l.field())
}

// unlock is unlockInnerAsync and the DEL of the unlock latch Redisson
// sends after it: 1 released (and published), 0 one hold fewer, nil not
// held by this thread.
func (l rlock) unlock(ctx context.Context) (any, error) {
	latch := "redisson_unlock_latch:{" + l.name + "}:"
	v, err := l.r.eval(ctx, "unlock", []string{l.name, l.channel(), latch + randomHex(16)},
		0, l.leaseMS, l.field(), "publish", 13500)
	if err != nil {
		return v, err
	}
	return v, l.r.c.Del(ctx, latch+l.r.id).Err()
}

// renew is the watchdog's LockTask.renew for this one lock: [1] while the
// field holds it.
func (l rlock) renew(ctx context.Context) (any, error) {
	return l.r.eval(ctx, "renew", []string{l.name}, l.leaseMS, l.field())
}

// TestRedissonRLock replays RLock against a plain redis-server, then
// against redlockd over three backends: lock (nil; the PTTL for another
// thread), reentry (hold count 2 on every backend), unlock twice (0, then
// 1 and the key gone everywhere), a waiter subscribed to the lock's
// channel that gets the unlock message exactly once and then acquires,
// and watchdog renewals that keep a short lease alive past its expiry.
func TestRedissonRLock(t *testing.T) {
	scripts := map[string]redissonScript{}
	for _, n := range []string{"lock", "unlock", "renew"} {
		scripts[n] = loadRedissonScript(t, n)
	}
	eachTarget(t, func(t *testing.T, tg target) {
		for _, protocol := range []int{2, 3} {
			t.Run(fmt.Sprintf("resp%d", protocol), func(t *testing.T) {
				ctx := testCtx(t)
				name := fmt.Sprintf("redisson:rlock:%d", protocol)
				holder := rlock{r: newRedisson(t, tg.addr, protocol, true, scripts), name: name, threadID: 1, leaseMS: 30000}
				// The waiter is another Redisson instance, through the other proxy.
				waiter := rlock{r: newRedisson(t, tg.other, protocol, false, scripts), name: name, threadID: 7, leaseMS: 1000}
				t.Run("lock", func(t *testing.T) { redissonLockReenter(ctx, t, tg, holder, waiter) })
				t.Run("unlock", func(t *testing.T) { redissonUnlockWakes(ctx, t, tg, holder, waiter) })
				t.Run("renew", func(t *testing.T) { redissonRenew(ctx, t, tg, waiter, holder) })
			})
		}
	})
}

func redissonLockReenter(ctx context.Context, t *testing.T, tg target, holder, other rlock) {
	if v, err := holder.tryLock(ctx); err != nil || v != nil {
		t.Fatalf("lock: %v, %v; want nil (acquired)", v, err)
	}
	wantHolds(ctx, t, tg, holder, "1")
	if v, err := other.tryLock(ctx); err != nil || !isPTTL(v, holder.leaseMS) {
		t.Fatalf("lock by another thread: %v, %v; want the PTTL", v, err)
	}
	// The hash is a lock to every other kind of claim on the key too.
	if ok, err := other.r.c.SetNX(ctx, holder.name, "x", time.Second).Result(); err != nil || ok {
		t.Fatalf("SET NX PX over the held RLock: %v, %v; want not set", ok, err)
	}
	if v, err := holder.tryLock(ctx); err != nil || v != nil {
		t.Fatalf("reentry: %v, %v; want nil", v, err)
	}
	wantHolds(ctx, t, tg, holder, "2")
}

func redissonUnlockWakes(ctx context.Context, t *testing.T, tg target, holder, waiter rlock) {
	ps := waiter.r.c.Subscribe(ctx, waiter.channel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE %s: %v", waiter.channel(), err)
	}
	if v, err := holder.unlock(ctx); err != nil || v != int64(0) {
		t.Fatalf("first unlock of two holds: %v, %v; want 0", v, err)
	}
	wantHolds(ctx, t, tg, holder, "1")
	if v, err := waiter.tryLock(ctx); err != nil || !isPTTL(v, holder.leaseMS) {
		t.Fatalf("lock after one unlock: %v, %v; want the PTTL", v, err)
	}
	if v, err := holder.unlock(ctx); err != nil || v != int64(1) {
		t.Fatalf("second unlock: %v, %v; want 1", v, err)
	}
	wantGone(ctx, t, tg, holder.name)
	wantOneUnlockMessage(ctx, t, tg, ps, waiter.channel())
	if v, err := waiter.tryLock(ctx); err != nil || v != nil {
		t.Fatalf("the woken waiter's lock: %v, %v; want nil", v, err)
	}
	if v, err := holder.unlock(ctx); err != nil || v != nil {
		t.Fatalf("unlock by a thread that does not hold it: %v, %v; want nil", v, err)
	}
}

// wantOneUnlockMessage reads ps until a marker published after the unlock
// arrives, then for a short while more, and fails unless exactly one
// unlock message (0) came.
func wantOneUnlockMessage(ctx context.Context, t *testing.T, tg target, ps *redis.PubSub, channel string) {
	t.Helper()
	publisher := redis.NewClient(&redis.Options{Addr: tg.other, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer publisher.Close()
	if err := publisher.Publish(ctx, channel, "marker").Err(); err != nil {
		t.Fatalf("PUBLISH marker: %v", err)
	}
	var got []string
	for len(got) < 10 && (len(got) == 0 || got[len(got)-1] != "marker") {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("waiting for the unlock message: %v (got %q)", err, got)
		}
		got = append(got, m.Payload)
	}
	// A copy from a slower backend would arrive within this bound.
	for len(got) < 10 {
		msg, err := ps.ReceiveTimeout(ctx, 300*time.Millisecond)
		if err != nil {
			break
		}
		if m, ok := msg.(*redis.Message); ok {
			got = append(got, m.Payload)
		}
	}
	if strings.Join(got, ",") != "0,marker" {
		t.Fatalf("messages on %s: %q, want the unlock message 0 once, then the marker once", channel, got)
	}
}

// redissonRenew: holder's lease is 1 s; the watchdog's renewals every
// lease/3 keep it held for three leases, and other still gets its PTTL.
func redissonRenew(ctx context.Context, t *testing.T, tg target, holder, other rlock) {
	wantHolds(ctx, t, tg, holder, "1") // the waiter's lock of the unlock step
	lease := time.Duration(holder.leaseMS) * time.Millisecond
	tick := time.NewTicker(lease / 3)
	defer tick.Stop()
	for i := 0; i < 9; i++ { // three leases
		<-tick.C
		v, err := holder.renew(ctx)
		if vs, ok := v.([]any); err != nil || !ok || len(vs) != 1 || vs[0] != int64(1) {
			t.Fatalf("renewal %d: %v, %v; want [1]", i, v, err)
		}
	}
	if v, err := other.tryLock(ctx); err != nil || !isPTTL(v, holder.leaseMS) {
		t.Fatalf("lock by another thread after three leases: %v, %v; want the PTTL", v, err)
	}
	wantHolds(ctx, t, tg, holder, "1")
	if v, err := holder.unlock(ctx); err != nil || v != int64(1) {
		t.Fatalf("unlock after renewals: %v, %v; want 1", v, err)
	}
	wantGone(ctx, t, tg, holder.name)
}

// isPTTL reports whether v is a remaining ttl in (0, lease].
func isPTTL(v any, lease int64) bool {
	n, ok := v.(int64)
	return ok && n > 0 && n <= lease
}

// wantHolds checks every backend: l's field of the lock hash is holds, and
// the hash expires within the lease.
func wantHolds(ctx context.Context, t *testing.T, tg target, l rlock, holds string) {
	t.Helper()
	for _, s := range tg.backends {
		c := s.Client()
		got, err := c.HGet(ctx, l.name, l.field()).Result()
		pttl := c.PTTL(ctx, l.name).Val()
		if err != nil || got != holds || pttl <= 0 || pttl > time.Duration(l.leaseMS)*time.Millisecond {
			t.Fatalf("backend %s: HGET %s %s = %q (%v), PTTL %v; want %s within the lease", s.Addr(), l.name, l.field(), got, err, pttl, holds)
		}
	}
}

func wantGone(ctx context.Context, t *testing.T, tg target, key string) {
	t.Helper()
	for _, s := range tg.backends {
		if n, err := s.Client().Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("backend %s: EXISTS %s = %d (%v), want 0", s.Addr(), key, n, err)
		}
	}
}
