package quorum

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Kept is a lock that the cluster renews in the background, every third of
// its ttl, until Stop or until it is lost. One goroutine per kept lock;
// Stop waits for it, so none outlives the connection that owns the lock.
type Kept struct {
	c      *Cluster
	key    string
	token  string
	ttl    time.Duration
	onLost func(error)

	// mu is held for the whole of a renewal, and by While, so that a caller
	// changing the lock on the backends never races a renewal.
	mu       sync.Mutex
	stopped  bool
	until    time.Time // the end of the validity last reported; under mu
	promised time.Time // the latest end of a validity Granted told; under mu
	lastErr  error     // the last failed renewal's; under mu
	quit     chan struct{}
	quitOnce sync.Once
	done     chan struct{}
}

// Keep starts renewing key=token with ttl every ttl/3 (by RenewKept, so
// owner locks keep their hold counts, and nodes that lost the lock get it
// back). valid is the validity the lock has now (what its acquire reported,
// less the time since). A renewal that fails changes nothing on the nodes:
// it is tried again after a short random pause for as long as the validity
// last reported runs. Only when that has run out without a successful
// renewal is the lock lost: renewal stops (the token is left to expire: an
// owner lock's token may carry holds that other connections still renew)
// and onLost (if not nil) is
// called once with the last error, from the renewal goroutine (it must not
// call Stop, which waits for that goroutine). Renewals run under a context
// of their own: the caller's cancellation must not end them, and each node
// call keeps the per-node timeout.
func (c *Cluster) Keep(key, token string, ttl, valid time.Duration, onLost func(error)) *Kept {
	k := &Kept{
		c: c, key: key, token: token, ttl: ttl, onLost: onLost,
		until: c.cfg.Now().Add(valid),
		quit:  make(chan struct{}), done: make(chan struct{}),
	}
	go k.loop()
	return k
}

func (k *Kept) interval() time.Duration { return max(k.ttl/3, time.Millisecond) }

// retryDelay is the pause after a failed renewal: a tenth of the ttl,
// between 5ms and 250ms, less a random part of up to half of it (so that
// proxies retrying one lock do not keep in step), and never past the end of
// the validity.
func (k *Kept) retryDelay(left time.Duration) time.Duration {
	d := min(max(k.ttl/10, 5*time.Millisecond), 250*time.Millisecond)
	d -= time.Duration(rand.Int64N(int64(d/2) + 1))
	return max(min(d, left), time.Millisecond)
}

func (k *Kept) loop() {
	defer close(k.done)
	t := time.NewTimer(k.interval())
	defer t.Stop()
	for {
		select {
		case <-k.quit:
			return
		case <-t.C:
		}
		next, err := k.renew()
		if err != nil {
			if k.onLost != nil {
				k.onLost(err)
			}
			return
		}
		if next <= 0 {
			return // stopped
		}
		t.Reset(next)
	}
}

// renew makes one renewal and returns the pause before the next one (0:
// stopped); a non-nil error means the lock is lost, its validity having
// run out without a successful renewal.
func (k *Kept) renew() (time.Duration, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return 0, nil
	}
	now := k.c.cfg.Now()
	if !k.until.After(now) {
		return 0, k.lose(k.lastErr)
	}
	v, err := k.c.RenewKept(context.Background(), k.key, k.token, k.renewTTL(now))
	if err == nil {
		k.until = k.c.cfg.Now().Add(v)
		return k.interval(), nil
	}
	k.lastErr = err
	left := k.until.Sub(k.c.cfg.Now())
	if left <= 0 {
		return 0, k.lose(err)
	}
	return k.retryDelay(left), nil
}

// renewTTL is the ttl of a renewal at now: the kept ttl, or more while a
// validity told by Granted (a RENEW may promise more than the kept ttl)
// runs longer; the lock must outlive that even if the renewals stop right
// after this one. covering adds the margin that Validity takes off, so
// that a renewal's own validity covers the promise. The caller holds k.mu.
func (k *Kept) renewTTL(now time.Time) time.Duration {
	left := k.promised.Sub(now)
	if left <= 0 {
		return k.ttl
	}
	return max(k.ttl, covering(left, k.c.cfg.DriftFactor))
}

// Granted records a new grant of the kept lock (one more hold of an owner
// lock, or a RENEW by its client) with validity valid from now: the lock
// is not lost before that runs out either, and renewals keep it on the
// backends at least that long.
func (k *Kept) Granted(valid time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	u := k.c.cfg.Now().Add(valid)
	if u.After(k.until) {
		k.until = u
	}
	if u.After(k.promised) {
		k.promised = u
	}
}

// lose stops the renewals for good; last is the last renewal's error (nil
// when none was tried). The caller holds k.mu.
func (k *Kept) lose(last error) error {
	k.stopped = true
	if last == nil {
		return fmt.Errorf("%w: its validity ran out", ErrNotHeld)
	}
	return fmt.Errorf("%w: no renewal within its validity: %w", ErrNotHeld, last)
}

// Stop ends the renewals and waits until the renewal goroutine has exited.
// With release it then releases the lock on every node (the whole lock, all
// holds of an owner lock). Safe to call twice and after the lock was lost.
func (k *Kept) Stop(release bool) {
	k.While(func() bool { return true })
	if release {
		_, _ = k.c.Release(context.Background(), k.key, k.token)
	}
}

// While runs f with renewals held off, so that f can change the lock on the
// backends (drop a hold, release it) without a renewal racing it. When f
// returns true the renewals stop, as by Stop(false).
func (k *Kept) While(f func() (stop bool)) {
	k.mu.Lock()
	stop := f()
	if stop {
		k.stopped = true
	}
	k.mu.Unlock()
	if stop {
		k.halt()
	}
}

func (k *Kept) halt() {
	k.quitOnce.Do(func() { close(k.quit) })
	<-k.done
}
