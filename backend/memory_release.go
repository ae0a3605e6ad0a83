package backend

import (
	"context"
	"sync"
)

// releaseWatchers are the callbacks a node tells of released keys.
type releaseWatchers struct {
	mu  sync.Mutex
	fns []func(key string)
}

func (w *releaseWatchers) add(fn func(key string)) {
	w.mu.Lock()
	w.fns = append(w.fns, fn)
	w.mu.Unlock()
}

func (w *releaseWatchers) notify(key string) {
	w.mu.Lock()
	fns := w.fns
	w.mu.Unlock()
	for _, fn := range fns {
		fn(key)
	}
}

// CompareAndDeleteNotify implements quorum.ReleaseNotifier: every Cluster
// over this node hears of the release, as proxies sharing a Redis backend
// do through its release channel. Unlike a Redis node it is no
// quorum.WaitMarker and tells of every release, waited for or not: the
// notice is a function call in the same process, cheaper than a mark.
func (m *Memory) CompareAndDeleteNotify(ctx context.Context, key, token string) (bool, error) {
	ok, err := m.CompareAndDelete(ctx, key, token)
	if ok {
		m.releases.notify(key)
	}
	return ok, err
}

// DeleteNotify implements quorum.ReleaseNotifier.
func (m *Memory) DeleteNotify(ctx context.Context, key string) (bool, error) {
	ok, err := m.Delete(ctx, key)
	if ok {
		m.releases.notify(key)
	}
	return ok, err
}

// WatchReleases implements quorum.ReleaseNotifier. fn runs on the
// releasing goroutine, outside the node's lock.
func (m *Memory) WatchReleases(fn func(key string)) { m.releases.add(fn) }
