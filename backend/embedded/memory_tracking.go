package embedded

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// memExpireEvery is how often a Memory node watched for changed keys
// drops its expired keys and reports them, as a Redis server's active
// expiry does (ten times a second).
const memExpireEvery = 100 * time.Millisecond

// memTracking reports the keys that the node's commands and its expiry
// changed, to the watchers of Invalidated (client-side caching).
type memTracking struct {
	on   atomic.Bool // a watcher exists: read by every command, without mu
	fns  watchers[func([]string)]
	mu   sync.Mutex
	stop chan struct{} // closed by Close; nil until the first watcher
	done chan struct{}
}

func (t *memTracking) report(keys []string) {
	if len(keys) == 0 {
		return
	}
	for _, fn := range t.fns.list() {
		fn(keys)
	}
}

// watchInvalidated adds fn and, with the first one, starts the expiry.
// fn hears nil at once: its reports have begun (every change from now on
// is reported, by the command that makes it).
func (m *Memory) watchInvalidated(fn func([]string)) {
	t := &m.tracking
	t.mu.Lock()
	t.fns.add(fn)
	t.on.Store(true)
	if t.stop == nil {
		t.stop, t.done = make(chan struct{}), make(chan struct{})
		go m.expireLoop(t.stop, t.done)
	}
	t.mu.Unlock()
	fn(nil)
}

// stopTracking ends the expiry loop and waits for it. Safe to call twice.
func (m *Memory) stopTracking() {
	t := &m.tracking
	t.mu.Lock()
	stop, done := t.stop, t.done
	t.stop = nil
	t.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (m *Memory) expireLoop(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(memExpireEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			m.tracking.report(m.dropExpired())
		}
	}
}

// dropExpired deletes the expired keys, strings and hashes, and returns
// them, with those that commands came upon expired since the last report,
// as clients name them (without their database).
func (m *Memory) dropExpired() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(m.now())
	return m.takeExpired()
}

// memBefore is how the keys a command names were before it ran, to tell
// which of them it changed.
type memBefore struct {
	keys    []string // node keys (memKey)
	entries []entry
	had     []bool
}

// snapshot records the keys c names; nil when nobody watches changes.
// The caller holds m.mu.
func (m *Memory) snapshot(c quorum.Cmd) *memBefore {
	if !m.tracking.on.Load() || backend.IsRead(c.Kind) {
		return nil
	}
	b := &memBefore{}
	add := func(k string) {
		nk := memKey(c.DB, k)
		e, ok := m.keys[nk]
		b.keys, b.entries, b.had = append(b.keys, nk), append(b.entries, e), append(b.had, ok)
	}
	if c.Key != "" {
		add(c.Key)
	}
	for _, k := range c.Keys {
		add(k)
	}
	return b
}

// changed lists the keys of b that the command changed: every key of a
// script that may write (it may have written a hash, which the entries do
// not show), else those whose entry differs. The caller holds m.mu.
func (m *Memory) changed(c quorum.Cmd, b *memBefore) []string {
	if b == nil {
		return nil
	}
	var out []string
	for i, nk := range b.keys {
		e, ok := m.keys[nk]
		if (c.Kind == quorum.Eval && c.Mark != "") || ok != b.had[i] || e != b.entries[i] {
			_, key := memSplit(nk)
			out = append(out, key)
		}
	}
	return out
}
