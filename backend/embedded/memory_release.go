package embedded

import "sync"

// releaseWatchers are the callbacks a node tells of released keys. Every
// Cluster over an in-memory node hears of its announced releases, as
// proxies sharing a Redis backend do through its release channel.
type releaseWatchers struct {
	mu  sync.Mutex
	fns []func(db int, key string)
}

func (w *releaseWatchers) add(fn func(db int, key string)) {
	w.mu.Lock()
	w.fns = append(w.fns, fn)
	w.mu.Unlock()
}

// notify runs on the releasing goroutine, outside the node's lock.
func (w *releaseWatchers) notify(db int, key string) {
	w.mu.Lock()
	fns := w.fns
	w.mu.Unlock()
	for _, fn := range fns {
		fn(db, key)
	}
}
