package embedded

import "sync"

// watchers are the functions a node tells of what happens on it: its
// released keys, its published messages, its changed keys. Every Cluster
// over an in-memory node adds its own, as proxies sharing a Redis backend
// each hear its release channel. They are called outside the node's lock,
// so that a watcher may call back into the node.
type watchers[F any] struct {
	mu  sync.Mutex
	fns []F
}

func (w *watchers[F]) add(fn F) {
	w.mu.Lock()
	w.fns = append(w.fns, fn)
	w.mu.Unlock()
}

// list is the functions added so far.
func (w *watchers[F]) list() []F {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fns
}
