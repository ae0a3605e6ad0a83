package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redlockd/redlockd/internal/redlocktest"
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
