package proxy

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/tidwall/redcon"

	"github.com/redlockd/redlockd/commands"
)

// admit takes a client slot; false when MaxClients are connected.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.MaxClients > 0 && s.clients >= s.opts.MaxClients {
		return false
	}
	s.clients++
	return true
}

// reject answers a client over MaxClients as Redis does, off the accept
// loop so that a client that never reads cannot stall it.
func (s *Server) reject(c net.Conn) {
	s.rejectWG.Add(1)
	go func() {
		defer s.rejectWG.Done()
		defer c.Close()
		c.SetWriteDeadline(time.Now().Add(rejectTimeout))
		io.WriteString(c, msgMaxClients)
	}()
}

// accept runs on redcon's accept loop for every admitted connection.
func (s *Server) accept(c redcon.Conn) bool {
	st := &connState{nc: c.NetConn(), sess: s.h.NewSession(c.RemoteAddr())}
	st.guard, _ = st.nc.(*guardConn)
	st.w = NewWriter(st.sess.Proto)
	st.maxReply = maxReplyBytes(s.opts.MaxReplyBytes)
	st.sess.SetPush(st.push)
	if !s.track(st) {
		// Shutdown is tearing connections down; this one came too late.
		s.h.CloseSession(st.sess)
		return false
	}
	c.SetContext(st)
	return true
}

// track registers a connection for Shutdown, unless it has begun.
func (s *Server) track(st *connState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closing:
		s.clients--
		return false
	default:
	}
	s.conns[st] = struct{}{}
	s.connWG.Add(1)
	return true
}

// closed runs on the connection's goroutine after redcon closed it, while
// redcon holds its server lock: the session ends on its own goroutine,
// because ending it may release locks on the backends.
func (s *Server) closed(c redcon.Conn, err error) {
	st, ok := c.Context().(*connState)
	if !ok {
		return
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("connection closed", "addr", c.RemoteAddr(), "err", err)
	}
	s.mu.Lock()
	delete(s.conns, st)
	s.mu.Unlock()
	s.countOut(st)
	go func() {
		defer s.connWG.Done()
		s.h.CloseSession(st.sess)
	}()
}

// serveRESP gets the first command of a read batch. It takes the rest of
// the batch too and writes all replies itself, so that a batch counts as
// in flight until its replies are on the socket: redcon would flush them
// only after the handler returned, too late for Shutdown to wait for.
func (s *Server) serveRESP(c redcon.Conn, cmd redcon.Command) {
	st := c.Context().(*connState)
	if st.done {
		return
	}
	if !s.flight.begin() {
		st.done = true
		c.Close()
		return
	}
	rest := c.ReadPipeline()
	stop := s.watchBatch(st, cmd, rest)
	quit := s.runBatch(st, cmd, rest)
	if stop() {
		// The client hung up: nobody reads the replies, and the commands
		// it sent before it left go with it, as in Redis.
		s.flight.end()
		st.done = true
		c.Close()
		return
	}
	err := st.flush()
	s.flight.end()
	if err != nil {
		s.logWriteFailure(c, err)
	}
	if quit || err != nil {
		st.done = true
		c.Close()
	}
}

// watchBatch watches the connection for a hang-up while a batch that may
// block runs (see guardConn.watch). A client that hangs up stops its
// waits at once (its session's context is cancelled) and gives its socket
// and its slot back at once; its session ends when the batch has returned,
// so that it also releases what a wait got in its last moment.
func (s *Server) watchBatch(st *connState, first redcon.Command, rest []redcon.Command) (stop func() bool) {
	if st.guard == nil || !anyMayBlock(first, rest) {
		return func() bool { return false }
	}
	return st.guard.watch(func() {
		st.sess.HangUp()
		st.guard.Conn.Close()
		s.countOut(st)
	})
}

func anyMayBlock(first redcon.Command, rest []redcon.Command) bool {
	if commands.MayBlock(first.Args) {
		return true
	}
	for _, c := range rest {
		if commands.MayBlock(c.Args) {
			return true
		}
	}
	return false
}

// countOut gives a connection's client slot back, once: a client that
// hangs up during a wait is counted out before its connection is done.
func (s *Server) countOut(st *connState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.countedOut {
		st.countedOut = true
		s.clients--
	}
}

// logWriteFailure names a client dropped for a limit; a client that went
// away is not news.
func (s *Server) logWriteFailure(c redcon.Conn, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, errReplyLimit):
		s.log.Info("client closed: its pending replies exceed the output limit", "addr", c.RemoteAddr())
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Info("client closed: it does not read its replies", "addr", c.RemoteAddr())
	default:
		s.log.Debug("writing replies failed", "addr", c.RemoteAddr(), "err", err)
	}
}

// run executes one command and reports whether the client asked to quit.
func (s *Server) run(st *connState, cmd redcon.Command) bool {
	s.h.Exec(st.sess, cmd.Args, st.w)
	return st.sess.Quit()
}

func (st *connState) flush() error {
	b := st.w.Bytes()
	if len(b) == 0 {
		return nil
	}
	if st.maxReply > 0 && len(b) > st.maxReply {
		st.w.buf = nil
		return errReplyLimit
	}
	st.wmu.Lock()
	_, err := st.nc.Write(b)
	st.wmu.Unlock()
	if cap(b) > maxKeptBuffer {
		st.w.buf = nil
	} else {
		st.w.Reset()
	}
	return err
}

// push writes a RESP3 push message of bulk strings between two replies. It
// runs on whatever goroutine has news for the client (a lost kept lock),
// never on the connection's own, so it takes its own buffer and wmu. A
// failed write closes the connection: part of a message may be on the
// wire, and the connection's next write would fail the same way.
func (st *connState) push(args ...string) {
	w := NewWriter(nil)
	w.header('>', len(args))
	for _, a := range args {
		w.WriteBulkString(a)
	}
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if _, err := st.nc.Write(w.Bytes()); err != nil {
		st.nc.Close()
	}
}
