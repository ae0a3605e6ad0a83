package proxy

import (
	"errors"
	"os"
	"time"
)

// watchLimit is how many bytes a client may send while a blocking command
// of its runs before the watch stops reading them: a client that is still
// sending is still there, and what it sent waits in the guard's buffer for
// its turn.
const watchLimit = 64 << 10

// watch reads the connection while a batch that may block (LOCK … WAIT)
// runs, because redcon reads only between batches: without it a client
// that hangs up is noticed only when the wait ends, and keeps its slot,
// its socket and its place in the queue until then. The bytes it reads go
// through the guard's check into its buffer, exactly as if redcon had read
// them, so pipelined commands are served in order after the batch. On EOF
// or a reset it calls gone at once. The returned stop ends the watch and
// reports whether the client was gone; the guard is the caller's again
// once stop has returned.
func (g *guardConn) watch(gone func()) (stop func() bool) {
	if g.err != nil {
		gone()
		return func() bool { return true }
	}
	quit, done := make(chan struct{}), make(chan struct{})
	var hungUp bool
	// redcon's idle deadline, if any, was set for the read before the
	// batch: a running command is not idleness.
	g.Conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(done)
		hungUp = g.watchLoop(quit)
		if hungUp {
			gone()
		}
	}()
	return func() bool {
		close(quit)
		g.Conn.SetReadDeadline(time.Unix(1, 0)) // wakes the pending Read
		<-done
		g.Conn.SetReadDeadline(time.Time{})
		return hungUp
	}
}

// watchLoop reads until quit is closed or the client is gone (true).
func (g *guardConn) watchLoop(quit <-chan struct{}) bool {
	if g.rbuf == nil {
		g.rbuf = make([]byte, 16<<10)
	}
	for {
		select {
		case <-quit:
			return false
		default:
		}
		if g.fail != "" || len(g.out) >= watchLimit {
			<-quit
			return false
		}
		n, err := g.Conn.Read(g.rbuf)
		g.scan(g.rbuf[:n])
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Only stop sets a deadline, after closing quit.
		default:
			g.err = err
			return true
		}
	}
}
