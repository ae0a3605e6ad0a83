package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlockd/redlockd/testkit/redlocktest"
)

// TestRedsync runs go-redsync v4 unchanged with a single pool pointed at
// redlockd: its quorum of one is redlockd's quorum of three.
func TestRedsync(t *testing.T) {
	in := startRedlockd(t)
	ctx := testCtx(t)
	rs := redsync.New(goredis.NewPool(in.Client(t, 0)))
	const name = "redsync:orders"
	m := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if n := redlocktest.Count(in.BackendValues(t, name), m.Value()); n < 2 {
		t.Fatalf("token on %d backends, want a majority", n)
	}

	// A second mutex on the same name is refused while the first holds it.
	other := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(3),
		redsync.WithRetryDelay(10*time.Millisecond))
	var taken *redsync.ErrTaken
	if err := other.LockContext(ctx); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
		t.Fatalf("second mutex Lock: err = %v, want ErrFailed or ErrTaken", err)
	}

	before := m.Until()
	if ok, err := m.ExtendContext(ctx); err != nil || !ok {
		t.Fatalf("Extend = %v, %v; want true", ok, err)
	}
	if !m.Until().After(before) {
		t.Fatalf("Extend did not move Until: %v -> %v", before, m.Until())
	}
	//lint:ignore SA1019 still shipped by redsync, and it is the library's own majority GET of the token
	if ok, err := m.ValidContext(ctx); err != nil || !ok {
		t.Fatalf("Valid = %v, %v; want true", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("Unlock = %v, %v; want true", ok, err)
	}
	if n := redlocktest.Count(in.BackendValues(t, name), "<nil>"); n != 3 {
		t.Fatalf("after Unlock the key is absent on %d backends, want 3", n)
	}
	// Once released, the other mutex gets it; unlocking the first again
	// must not touch the new holder's lock.
	if err := other.LockContext(ctx); err != nil {
		t.Fatalf("second mutex Lock after release: %v", err)
	}
	if ok, _ := m.UnlockContext(ctx); ok {
		t.Fatalf("stale Unlock reported success")
	}
	if n := redlocktest.Count(in.BackendValues(t, name), other.Value()); n < 2 {
		t.Fatalf("stale Unlock removed the new holder's lock (token on %d backends)", n)
	}
	if ok, err := other.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("second mutex Unlock = %v, %v", ok, err)
	}
}

// TestRedsyncInSelectedDB runs go-redsync over a client of db 6 (a
// redis://…/6 URL): its lock, its extend and release scripts act in db 6
// of every backend, while a mutex of the same name in db 0 holds its own
// lock at the same time.
func TestRedsyncInSelectedDB(t *testing.T) {
	in := startRedlockd(t)
	ctx := testCtx(t)
	client := func(db int) *redis.Client {
		opt, err := redis.ParseURL(fmt.Sprintf("redis://%s/%d", in.Addr, db))
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		return c
	}
	dbValues := func(db int, key string) []string {
		vals := make([]string, len(in.Backends))
		for i, s := range in.Backends {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: db, DisableIdentity: true})
			v, err := c.Get(ctx, key).Result()
			c.Close()
			if errors.Is(err, redis.Nil) {
				v = "<nil>"
			} else if err != nil {
				t.Fatal(err)
			}
			vals[i] = v
		}
		return vals
	}
	const name = "redsync:db"
	m6 := redsync.New(goredis.NewPool(client(6))).NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	m0 := redsync.New(goredis.NewPool(client(0))).NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	for _, m := range []*redsync.Mutex{m6, m0} {
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
	}
	if vals := dbValues(6, name); redlocktest.Count(vals, m6.Value()) != 3 {
		t.Fatalf("db 6 holds %v, want db 6's token on every backend", vals)
	}
	if ok, err := m6.ExtendContext(ctx); err != nil || !ok {
		t.Fatalf("Extend in db 6 = %v, %v", ok, err)
	}
	if ok, err := m6.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("Unlock in db 6 = %v, %v", ok, err)
	}
	if vals := dbValues(6, name); redlocktest.Count(vals, "<nil>") != 3 {
		t.Fatalf("after Unlock db 6 holds %v", vals)
	}
	if vals := dbValues(0, name); redlocktest.Count(vals, m0.Value()) != 3 {
		t.Fatalf("db 0 holds %v after db 6's mutex came and went, want its own token", vals)
	}
}
