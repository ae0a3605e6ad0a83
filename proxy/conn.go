package proxy

import (
	"errors"
	"io"
	"net"
	"time"

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

// acceptLoop accepts connections until the gate ends accepting, then
// closes every connection still open: the gate ends it only once Shutdown
// has drained the commands in flight, or the listener failed.
func (s *Server) acceptLoop(g *gateListener) {
	defer s.closeAll()
	for {
		c, err := g.Accept()
		if err != nil {
			g.Listener.Close()
			return
		}
		st, ok := s.accept(c)
		if !ok {
			c.Close()
			continue
		}
		go s.serveConn(st)
	}
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.conns {
		st.nc.Close()
	}
}

// accept runs on the accept loop for every admitted connection.
func (s *Server) accept(c net.Conn) (*connState, bool) {
	st := &connState{nc: c, addr: c.RemoteAddr().String()}
	st.sess = s.h.NewSession(st.addr)
	st.rd = newReader(c, s.opts.MaxRequestBytes, s.opts.IdleTimeout)
	st.try = newTryWriter(c)
	if s.opts.IdleTimeout > 0 {
		st.rd.replied = func() time.Time {
			st.alone.Wait()
			return time.Unix(0, st.lastReply.Load())
		}
	}
	st.w = NewWriter(st.sess.Proto)
	st.maxReply = maxReplyBytes(s.opts.MaxReplyBytes)
	st.sess.SetPush(st.push)
	st.out = newOutbox(st, s.opts.MaxPubSubBytes, func() {
		s.log.Info("client closed: its undelivered messages exceed the pub/sub output limit", "addr", st.addr)
	})
	st.sess.SetDeliver(st.deliver)
	st.sess.SetInvalidate(st.invalidate, st.redirectBroken)
	if !s.track(st) {
		// Shutdown is tearing connections down; this one came too late.
		s.h.CloseSession(st.sess)
		return nil, false
	}
	return st, true
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

// serveConn is a connection's goroutine: it reads batches of requests and
// runs them until the client leaves, quits or breaks the protocol (it
// then gets Redis's error reply after the replies to what came before).
func (s *Server) serveConn(st *connState) {
	var err error
	for !st.done {
		var batch [][][]byte
		batch, err = st.rd.next()
		// The reply of a command started alone (startAlone) comes before
		// anything this read brings, and a failed write of it ends the
		// connection.
		st.alone.Wait()
		if st.broken.Load() {
			break
		}
		if err != nil {
			if reply := protocolReply(err); reply != nil {
				st.wmu.Lock()
				st.nc.Write(reply) // the connection closes either way
				st.wmu.Unlock()
			}
			break
		}
		s.serveBatch(st, batch)
	}
	st.alone.Wait()
	st.nc.Close()
	st.out.close()
	s.closed(st, err)
}

// closed runs on the connection's goroutine once it is closed: the session
// ends on a goroutine of its own, because ending it may release locks on
// the backends.
func (s *Server) closed(st *connState, err error) {
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("connection closed", "addr", st.addr, "err", err)
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

// serveBatch runs a read batch and writes all its replies at once, then
// counts it out of flight: Shutdown waits for a batch until its replies
// are on the socket.
func (s *Server) serveBatch(st *connState, batch [][][]byte) {
	if !s.flight.begin() {
		st.done = true
		return
	}
	st.reqs = st.reqs[:0]
	for _, args := range batch {
		st.reqs = append(st.reqs, commands.NewRequest(args))
	}
	blocks := anyMayBlock(st.reqs)
	if len(st.reqs) == 1 && !blocks && s.startAlone(st) {
		clear(st.reqs)
		return
	}
	stop := s.watchBatch(st, blocks)
	// Messages wait for the batch's replies (a SUBSCRIBE's confirmation
	// comes before its messages, a read's reply before the invalidation
	// of what it read). A batch that may block for long writes its
	// replies as they are ready while it waits, and lets messages out
	// whenever no reply is owed (runStepwise).
	st.out.hold(true)
	defer st.out.hold(false)
	st.blocking, st.werr = blocks, nil
	quit := s.runBatch(st, st.reqs)
	clear(st.reqs) // holds no arguments between batches
	if stop() {
		// The client hung up: nobody reads the replies, and the commands
		// it sent before it left go with it, as in Redis.
		s.flight.end()
		st.done = true
		return
	}
	err := st.werr
	if err == nil {
		err = st.flush()
	} else {
		st.replyWritten()
	}
	s.flight.end()
	if err != nil {
		s.logWriteFailure(st, err)
	}
	if quit || err != nil {
		st.done = true
	}
}

// watchBatch watches the connection for a hang-up while a batch that may
// block runs (see reader.watch). A client that hangs up stops its waits at
// once (its session's context is cancelled) and gives its socket and its
// slot back at once; its session ends when the batch has returned, so
// that it also releases what a wait got in its last moment.
func (s *Server) watchBatch(st *connState, blocks bool) (stop func() bool) {
	if !blocks {
		return noWatch
	}
	return st.rd.watch(func() {
		st.sess.HangUp()
		st.nc.Close()
		s.countOut(st)
	})
}

func noWatch() bool { return false }

func anyMayBlock(reqs []commands.Request) bool {
	for _, r := range reqs {
		if r.MayBlock() {
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
func (s *Server) logWriteFailure(st *connState, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, errReplyLimit):
		s.log.Info("client closed: its pending replies exceed the output limit", "addr", st.addr)
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Info("client closed: it does not read its replies", "addr", st.addr)
	default:
		s.log.Debug("writing replies failed", "addr", st.addr, "err", err)
	}
}

// run executes one command and reports whether the client asked to quit.
func (s *Server) run(st *connState, r commands.Request) bool {
	s.h.Run(st.sess, r, st.w)
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
	st.replyWritten()
	return err
}

// writeOut writes the replies ready so far of a batch that may block,
// before it waits or as soon as they are ready (runStepwise). A failed
// write is kept for the batch's end (werr), and nothing more is written.
func (st *connState) writeOut() {
	if st.werr != nil {
		st.replyWritten()
		return
	}
	st.werr = st.flush()
}

// replyWritten empties the reply buffer once its bytes are on the socket,
// keeping it for the next batch unless it grew large.
func (st *connState) replyWritten() {
	if cap(st.w.buf) > maxKeptBuffer {
		st.w.buf = nil
	} else {
		st.w.Reset()
	}
}

// startAlone starts a batch of one command in its asynchronous form
// (commands.Handler.Start), where it has one: the goroutine of the
// round's deciding reply then writes the reply, so the connection's
// goroutine goes back to reading at once instead of sleeping until the
// round is decided and being woken to write. That wake-up is a
// scheduler round trip per request, the dearest part of a request after
// its system calls when clients do not pipeline. The deciding goroutine
// is a backend connection's reader, which must never wait for a client:
// it writes only what the socket takes at once (as every reply write
// tries first), and leaves the rest, or a write lock held by a push, to
// a goroutine of its own. It reports false, having started nothing, when
// the batch must run as any other: no asynchronous form, or a
// connection whose writes cannot be tried without waiting.
func (s *Server) startAlone(st *connState) bool {
	if st.try == nil {
		return false
	}
	if st.aloneDone == nil {
		st.aloneDone = func() { s.aloneReply(st) }
	}
	st.alone.Add(1)
	// Messages wait for the reply, as in every batch that does not block.
	st.out.hold(true)
	if !s.h.Start(st.sess, st.reqs[0], st.w, st.aloneDone) {
		st.out.hold(false)
		st.alone.Done()
		return false
	}
	return true
}

// aloneReply writes the reply of a command that startAlone started, on
// the goroutine that answered it.
func (s *Server) aloneReply(st *connState) {
	b := st.w.Bytes()
	switch {
	case len(b) == 0:
		s.aloneEnd(st, nil)
	case st.maxReply > 0 && len(b) > st.maxReply:
		st.w.buf = nil
		s.aloneEnd(st, errReplyLimit)
	case !st.wmu.TryLock():
		go s.aloneWrite(st, b, false)
	default:
		n := st.try.write(b)
		if n < len(b) {
			// Still under the write lock: no push may split the reply.
			go s.aloneWrite(st, b[n:], true)
			return
		}
		st.wmu.Unlock()
		s.aloneEnd(st, nil)
	}
}

// aloneWrite writes what is left of such a reply, waiting as any reply
// write may; locked says the write lock is already held.
func (s *Server) aloneWrite(st *connState, b []byte, locked bool) {
	if !locked {
		st.wmu.Lock()
	}
	_, err := st.nc.Write(b)
	st.wmu.Unlock()
	s.aloneEnd(st, err)
}

// aloneEnd ends a batch that startAlone started, as serveBatch ends the
// others: the messages held back go, the batch counts out of flight, and
// a failed write ends the connection.
func (s *Server) aloneEnd(st *connState, err error) {
	st.replyWritten()
	if st.rd.replied != nil {
		st.lastReply.Store(time.Now().UnixNano())
	}
	st.out.hold(false)
	s.flight.end()
	if err != nil {
		s.logWriteFailure(st, err)
		st.broken.Store(true)
		st.nc.Close()
	}
	st.alone.Done()
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

// invalidate queues an invalidation of client-side caching: the push
// ["invalidate", keys] in RESP3, the message ["message",
// "__redis__:invalidate", keys] in RESP2; nil keys are a null. Like a
// message, it waits for the batch that runs, so that it follows the
// replies of the reads before it.
func (st *connState) invalidate(keys []string) {
	w := NewWriter(st.sess.Proto)
	if w.resp3() {
		w.WritePush(2)
		w.WriteBulkString("invalidate")
	} else {
		w.WriteArray(3)
		w.WriteBulkString("message")
		w.WriteBulkString("__redis__:invalidate")
	}
	if keys == nil {
		w.WriteNull()
	} else {
		w.WriteArray(len(keys))
		for _, k := range keys {
			w.WriteBulkString(k)
		}
	}
	st.out.add(outFrame{b: w.Bytes(), live: always})
}

func always() bool { return true }

// redirectBroken queues the push ["tracking-redir-broken", id].
func (st *connState) redirectBroken(id int64) {
	w := NewWriter(st.sess.Proto)
	w.WritePush(2)
	w.WriteBulkString("tracking-redir-broken")
	w.WriteInt(id)
	st.out.add(outFrame{b: w.Bytes(), live: always})
}

// deliver queues a message of the connection's subscriptions: an array of
// bulk strings, a push on a RESP3 connection. live is asked again before
// it is written.
func (st *connState) deliver(live func() bool, args ...string) {
	w := NewWriter(st.sess.Proto)
	w.WritePush(len(args))
	for _, a := range args {
		w.WriteBulkString(a)
	}
	st.out.add(outFrame{b: w.Bytes(), live: live})
}
