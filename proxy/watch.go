package proxy

import (
	"errors"
	"os"
	"time"
)

// watchLimit is how many bytes a client may send while a blocking command
// of its runs before the watch stops reading them: a client that is still
// sending is still there, and what it sent waits in the reader's buffer
// for its turn.
const watchLimit = 64 << 10

// watch reads the connection while a batch that may block (LOCK … WAIT)
// runs, because the connection's goroutine reads only between batches:
// without it a client that hangs up is noticed only when the wait ends,
// and keeps its slot, its socket and its place in the queue until then.
// The bytes it reads are appended to the reader's buffer unparsed, and
// are parsed after the batch, so pipelined commands are served in order.
// On EOF or a reset it calls gone at once. The returned stop ends the
// watch and reports whether the client was gone; the reader is the
// caller's again once stop has returned.
func (r *reader) watch(gone func()) (stop func() bool) {
	if r.err != nil {
		gone()
		return func() bool { return true }
	}
	quit, done := make(chan struct{}), make(chan struct{})
	var hungUp bool
	// The idle deadline, if any, was set for the read before the batch: a
	// running command is not idleness.
	r.conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(done)
		hungUp = r.watchLoop(quit)
		if hungUp {
			gone()
		}
	}()
	return func() bool {
		close(quit)
		r.conn.SetReadDeadline(time.Unix(1, 0)) // wakes the pending Read
		<-done
		r.conn.SetReadDeadline(time.Time{})
		return hungUp
	}
}

// watchLoop reads until quit is closed or the client is gone (true).
func (r *reader) watchLoop(quit <-chan struct{}) bool {
	for {
		select {
		case <-quit:
			return false
		default:
		}
		if r.end-r.pos >= watchLimit {
			<-quit
			return false
		}
		r.readInto()
		switch err := r.err; {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Only stop sets a deadline, after closing quit.
			r.err = nil
		default:
			return true
		}
	}
}
