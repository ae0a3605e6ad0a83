package embedded

import (
	"sync"
	"time"
)

// delayQueue runs the in-memory node's delayed commands one at a time, in
// the order they were given, from timers: a command never overtakes an
// earlier one, as on a Redis connection, so a delayed release cannot run
// before the delayed SET it undoes.
type delayQueue struct {
	mu    sync.Mutex
	items []delayedRun
	armed bool // a timer or a drain will run the head
}

type delayedRun struct {
	due time.Time
	run func()
}

// push queues run for d from now. It reports false, queueing nothing,
// when d <= 0 and nothing waits: the caller then runs it at once.
func (q *delayQueue) push(d time.Duration, run func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d <= 0 && len(q.items) == 0 {
		return false
	}
	q.items = append(q.items, delayedRun{due: time.Now().Add(d), run: run})
	if !q.armed {
		q.armed = true
		time.AfterFunc(d, q.drain)
	}
	return true
}

// drain runs every command that is due, in order, then waits for the
// next one.
func (q *delayQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.armed = false
			q.mu.Unlock()
			return
		}
		head := q.items[0]
		if wait := time.Until(head.due); wait > 0 {
			time.AfterFunc(wait, q.drain)
			q.mu.Unlock()
			return
		}
		q.items[0] = delayedRun{}
		q.items = q.items[1:]
		q.mu.Unlock()
		head.run()
	}
}
