package wire

import (
	"context"
	"time"
)

// Answerer receives a submitted request's reply or error. A type that
// carries what it needs to read the reply, rather than a closure over it,
// saves an allocation per request.
//
// at is when the reply was read off the connection; zero when there is no
// reply (an error of the writer, a reset, the sweeper).
type Answerer interface {
	Answer(rep Reply, at time.Time, err error)
}

// Releaser is an Answerer told when the line no longer holds a request
// it answered: the request was answered (Answer has returned), it left
// the line's queue and the replies awaited (its reply was read, or its
// connection reset, or it was never sent), and the line's sweep dropped
// it. Released is called once per submission, from any goroutine, maybe
// with the line's lock held: it must not block, nor submit. From then on
// the request, and the answerer around it, may be reused for another
// submission. Until then a request answered at its deadline may still be
// in the line's hands: its reply can come later, and must then find the
// same request, answered.
type Releaser interface {
	Answerer
	Released(r *Request)
}

// Submit queues one command, encoded in r.Buf, on the line and calls cb
// with its reply or error, exactly once: from the reader when the reply comes
// before deadline, from the writer or a reset when the command fails, or
// from the line's sweeper once deadline has passed. No goroutine waits and
// no context or timer is made per command: the line's one timer covers
// every deadline. Nor is the clock read per command: a deadline already
// past is failed unsent by the writer (or the sweeper), which reads the
// clock once per batch. cb must not block; it may run before Submit
// returns. r is the caller's (one embedded in its answerer saves an
// allocation) and must be new, or zeroed (its Buf aside) after a Releaser
// was told that its last submission was released: a request is never in a
// line twice.
func (l *Line) Submit(r *Request, deadline time.Time, cb Answerer) {
	r.deadline, r.cb = deadline, cb
	r.refs.Store(3) // its answer, the line, the sweep
	if !l.enqueue(r) {
		r.refs.Store(1) // its answer alone
		r.finish(Reply{}, ErrClosed)
	}
}

// minSweepKeep is the least number of watched requests a line keeps before
// it drops the settled ones from its list.
const minSweepKeep = 256

// sweeper fails a line's submitted requests whose deadline passed
// unanswered. It keeps them in submission order, which is deadline order
// when every caller uses the same node timeout, and one timer set for the
// earliest deadline: under steady load the timer fires about once per
// timeout, finds every request answered, and moves on. Its fields are
// guarded by the line's mu.
type sweeper struct {
	watched []*Request
	limit   int         // compact watched when it reaches this length
	timer   *time.Timer // nil until the first submitted request
	armed   time.Time   // when timer fires; zero when it is not set
}

// watch adds r (queued, with a callback) to the sweep. l.mu is held.
func (s *sweeper) watch(l *Line, r *Request) {
	if len(s.watched) >= max(s.limit, minSweepKeep) {
		s.compact()
	}
	s.watched = append(s.watched, r)
	switch {
	case s.timer == nil:
		s.timer = time.AfterFunc(time.Until(r.deadline), l.sweep)
		s.armed = r.deadline
	case s.armed.IsZero() || r.deadline.Before(s.armed):
		s.timer.Reset(time.Until(r.deadline))
		s.armed = r.deadline
	}
}

// compact drops the settled requests from watched.
func (s *sweeper) compact() {
	keep := s.watched[:0]
	for _, r := range s.watched {
		if !r.fired.Load() {
			keep = append(keep, r)
		} else {
			r.unref()
		}
	}
	clear(s.watched[len(keep):])
	s.watched = keep
	s.limit = 2 * len(keep)
}

// stopSweeper ends the timer; the line is closing and settles everything
// it still holds itself. l.mu is held.
func (s *sweeper) stopSweeper() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armed = time.Time{}
	unrefAll(s.watched)
	clear(s.watched)
	s.watched = nil
}

// sweep runs on the line's timer: it settles every request whose deadline
// has passed and sets the timer for the earliest one left.
func (l *Line) sweep() {
	now := time.Now()
	var expired []*Request
	l.mu.Lock()
	s := &l.sweeper
	keep := s.watched[:0]
	var next time.Time
	for _, r := range s.watched {
		switch {
		case r.fired.Load():
			r.unref()
		case !now.Before(r.deadline):
			expired = append(expired, r)
		default:
			keep = append(keep, r)
			if next.IsZero() || r.deadline.Before(next) {
				next = r.deadline
			}
		}
	}
	clear(s.watched[len(keep):])
	s.watched, s.limit, s.armed = keep, 2*len(keep), next
	if !next.IsZero() && !l.closed {
		s.timer.Reset(next.Sub(now))
	}
	l.mu.Unlock()
	for _, r := range expired {
		// A request still queued is never sent; one already written may
		// yet be answered, and its reply is then dropped.
		if r.state.CompareAndSwap(stQueued, stAbandoned) {
			r.finish(Reply{}, errExpired)
		} else {
			r.finish(Reply{}, context.DeadlineExceeded)
		}
		r.unref()
	}
}
