package quorum

import (
	"context"
	"sync"
	"time"
)

// Kept is a lock that the cluster renews in the background, every third of
// its ttl, until Stop or until a renewal fails. One goroutine per kept lock;
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
	quit     chan struct{}
	quitOnce sync.Once
	done     chan struct{}
}

// Keep starts renewing key=token with ttl every ttl/3 (by Renew, so owner
// locks keep their hold counts too). When a renewal fails to reach a
// majority the lock is lost: renewal stops and onLost (if not nil) is called
// once with the error, from the renewal goroutine (it must not call Stop,
// which waits for that goroutine). Renewals run under a
// context of their own: the caller's cancellation must not end them, and
// each node call keeps the per-node timeout.
func (c *Cluster) Keep(key, token string, ttl time.Duration, onLost func(error)) *Kept {
	k := &Kept{
		c: c, key: key, token: token, ttl: ttl, onLost: onLost,
		quit: make(chan struct{}), done: make(chan struct{}),
	}
	go k.loop()
	return k
}

func (k *Kept) interval() time.Duration { return max(k.ttl/3, time.Millisecond) }

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
		if err := k.renew(); err != nil {
			if k.onLost != nil {
				k.onLost(err)
			}
			return
		}
		if k.isStopped() {
			return
		}
		t.Reset(k.interval())
	}
}

// renew makes one renewal; a non-nil error means the lock is lost.
func (k *Kept) renew() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil
	}
	if _, err := k.c.Renew(context.Background(), k.key, k.token, k.ttl); err != nil {
		k.stopped = true
		return err
	}
	return nil
}

func (k *Kept) isStopped() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stopped
}

// Stop ends the renewals and waits until the renewal goroutine has exited.
// With release it then releases the lock on every node (the whole lock, all
// holds of an owner lock). Safe to call twice and after the lock was lost.
func (k *Kept) Stop(release bool) {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.halt()
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
