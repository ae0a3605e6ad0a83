package proxy

import "sync"

// inflight counts command batches that are running, and tells Shutdown
// when the last one has finished. A sync.WaitGroup does not fit: batches
// keep starting while Shutdown waits, and begin must refuse them once
// shutdown has begun.
type inflight struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed once closing and n == 0
}

func newInflight() *inflight { return &inflight{idle: make(chan struct{})} }

// begin registers a batch; false once shutdown has begun.
func (t *inflight) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.n++
	return true
}

func (t *inflight) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.closing && t.n == 0 {
		close(t.idle)
	}
}

// drain refuses new batches and returns a channel closed when the running
// ones have finished. Safe to call more than once.
func (t *inflight) drain() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closing {
		t.closing = true
		if t.n == 0 {
			close(t.idle)
		}
	}
	return t.idle
}
