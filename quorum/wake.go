package quorum

import (
	"context"
	"slices"
	"sync"
	"time"
)

// markTTL is how long a waiter's round marks its key: until the waiter's
// deadline, capped at twice the longest gap between two of its rounds (a
// pause and a round with its cleanup), since each round marks again. It
// is 0 when no node is a WaitMarker or the deadline has passed.
func (c *Cluster) markTTL(deadline time.Time) time.Duration {
	left := deadline.Sub(c.cfg.Now())
	if left <= 0 {
		return 0
	}
	return min(left, max(2*(c.cfg.RetryDelayMax+2*c.cfg.NodeTimeout), time.Second))
}

// dbKey names a key of one database: the same key in two databases is
// two locks, with waiters of their own.
type dbKey struct {
	db  int
	key string
}

// waiter is one blocking acquire waiting for its key.
type waiter struct {
	key dbKey
	// ch holds at most one pending wake: several notifications of one
	// release (one per node, plus the local one) coalesce.
	ch chan struct{}
	// woken: the waiter's last pause ended on a wake. Only the waiter's
	// own goroutine reads and writes it.
	woken bool
}

// wakeRegistry holds the waiters of each key in arrival order. A release
// wakes only the oldest waiter of the key, so waiters are served roughly in
// the order they came; the others keep retrying on their jitter.
type wakeRegistry struct {
	mu   sync.Mutex
	keys map[dbKey][]*waiter
}

func newWakeRegistry() *wakeRegistry {
	return &wakeRegistry{keys: make(map[dbKey][]*waiter)}
}

func (r *wakeRegistry) join(db int, key string) *waiter {
	w := &waiter{key: dbKey{db, key}, ch: make(chan struct{}, 1)}
	r.mu.Lock()
	r.keys[w.key] = append(r.keys[w.key], w)
	r.mu.Unlock()
	return w
}

// leave removes w. A waiter that gives up with a wake still pending hands
// it to the next in line, so that a release is not lost on a waiter that
// timed out; one that acquired the lock drops it, since the key is held
// again.
func (r *wakeRegistry) leave(w *waiter, acquired bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.keys[w.key]
	if i := slices.Index(q, w); i >= 0 {
		q = append(q[:i:i], q[i+1:]...)
	}
	if len(q) == 0 {
		delete(r.keys, w.key)
	} else {
		r.keys[w.key] = q
	}
	select {
	case <-w.ch:
		if !acquired {
			r.wakeHeadLocked(w.key)
		}
	default:
	}
}

// notify wakes the oldest waiter of key in database db. It never blocks.
func (r *wakeRegistry) notify(db int, key string) {
	r.mu.Lock()
	r.wakeHeadLocked(dbKey{db, key})
	r.mu.Unlock()
}

func (r *wakeRegistry) wakeHeadLocked(key dbKey) {
	if q := r.keys[key]; len(q) > 0 {
		q[0].wake()
	}
}

// wake gives w a wake; it never blocks.
func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // already woken, not yet retried
	}
}

// count is the number of waiters on key in database db.
func (r *wakeRegistry) count(db int, key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys[dbKey{db, key}])
}

// Waiters returns how many blocking acquires on this Cluster are waiting
// for key (in the Cluster's database).
func (c *Cluster) Waiters(key string) int { return c.wake.count(c.db, key) }

// pauseForRetry waits after a failed round for the first of: a release of
// the key, the jitter, the deadline, ctx. It reports whether to run another
// round: yes after a wake or the jitter, no at the deadline or on ctx.
func (c *Cluster) pauseForRetry(ctx context.Context, w *waiter, deadline time.Time) bool {
	left := deadline.Sub(c.cfg.Now())
	if left <= 0 {
		return false
	}
	pause := c.jitter()
	last := pause >= left
	if last {
		pause = left
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	w.woken = false
	select {
	case <-w.ch:
		w.woken = true
		return ctx.Err() == nil
	case <-t.C:
		return !last
	case <-ctx.Done():
		return false
	}
}

// handOn gives a wake that w could not use to the waiter of w's key after
// it on this proxy: a fair waiter woken by a release while another one is
// first in the key's queue lets the next local waiter try, which may be
// that one.
func (r *wakeRegistry) handOn(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.keys[w.key]
	if i := slices.Index(q, w); i >= 0 && i+1 < len(q) {
		q[i+1].wake()
	}
}
