package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/commands"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown or
// Close.
var ErrServerClosed = errors.New("proxy: server closed")

// errServing is returned by a second call to Serve.
var errServing = errors.New("proxy: Serve called twice")

const (
	// maxKeptBuffer caps the reply buffer a connection keeps between
	// batches, so one huge reply does not pin its memory for the
	// connection's lifetime.
	maxKeptBuffer = 256 << 10
	// rejectTimeout bounds writing the "max clients" error to a client that
	// never reads (or never finishes a TLS handshake).
	rejectTimeout = time.Second
	msgMaxClients = "-ERR max number of clients reached\r\n"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// Logger receives connection-level problems, never one line per
	// command. Default: slog.Default().
	Logger *slog.Logger
	// TLSConfig, when set, makes Serve speak TLS on the listener it is
	// given. Default: plain TCP.
	TLSConfig *tls.Config
	// MaxClients is the largest number of open client connections; one
	// more gets "-ERR max number of clients reached" and is closed.
	// Default 0: unlimited.
	MaxClients int
	// MaxRequestBytes caps one request (a command with its arguments, or
	// an inline line); a client that sends a bigger one is disconnected,
	// as Redis does past its query buffer limit. Nothing is allocated up
	// front. Default 0: DefaultMaxRequestBytes (512 MiB).
	MaxRequestBytes int
	// IdleTimeout closes a client connection that sent nothing for this
	// long; a command that is running (a LOCK WAIT) is not idleness.
	// Default 0: never, like Redis's "timeout 0".
	IdleTimeout time.Duration
	// MaxReplyBytes caps the replies of one read batch that wait to be
	// written: a client whose pipelined commands produce more is
	// disconnected without them (Redis's client-output-buffer-limit).
	// Default 0: no cap, as on the flag and in Redis; redlockd sets
	// DefaultMaxReplyBytes (64 MiB).
	MaxReplyBytes int
	// MaxPubSubBytes caps the messages of a connection's subscriptions
	// that wait to be written: a subscriber that reads slower than its
	// messages arrive is disconnected past it, as Redis does with
	// "client-output-buffer-limit pubsub", so that it never slows the
	// other subscribers nor grows the proxy's memory. Default 0:
	// DefaultMaxPubSubBytes (32 MiB).
	MaxPubSubBytes int
	// WriteTimeout bounds how long one write of replies may block on a
	// client that does not read them; past it the connection is closed,
	// so a client that never reads holds no more than its own goroutine
	// and buffer, and only for this long. Default 0: no bound, as on the
	// flag; redlockd sets DefaultWriteTimeout (60s).
	WriteTimeout time.Duration
}

// Server accepts RESP connections and runs their commands through a
// commands.Handler. Its shape follows net/http: Serve(ln), ListenAndServe,
// Shutdown(ctx), Close.
type Server struct {
	h    *commands.Handler
	opts Options
	log  *slog.Logger

	flight   *inflight
	ready    chan struct{} // closed once Serve is accepting
	closing  chan struct{} // closed when Shutdown or Close begins
	stopped  chan struct{} // closed once the listener is closed too
	released chan struct{} // closed when connections may be torn down
	done     chan struct{} // closed when Serve has cleaned up

	closeOnce   sync.Once
	releaseOnce sync.Once

	mu      sync.Mutex
	ln      *gateListener
	conns   map[*connState]struct{}
	clients int

	connWG   sync.WaitGroup // accepted connections not yet cleaned up
	rejectWG sync.WaitGroup // "max clients" replies being written

	work     chan pipeTask // to an idle worker (see worker)
	idle     atomic.Int32  // workers waiting on work
	handoffs atomic.Int64  // tasks handed to an idle worker
	tasks    atomic.Int64  // pipelined commands run on a worker
}

// connState is a client connection's state. It is only touched by the
// connection's own goroutine, except nc, sess and wg, which are safe for
// concurrent use, and rd, which a watch borrows while a batch that may
// block runs.
type connState struct {
	// wmu serialises the writes of whole replies and of push messages, so
	// that a push sent from another goroutine never splits a reply.
	wmu  sync.Mutex
	nc   net.Conn
	sess *commands.Session
	w    *Writer
	done bool // QUIT or a failed write: ignore the rest of the batch
	// maxReply is Options.MaxReplyBytes resolved; 0: no cap.
	maxReply int
	// rd reads and parses the requests; it is watched during blocking
	// commands.
	rd   *reader
	addr string
	// reqs is the batch being run, looked up in the command table once.
	reqs    []commands.Request
	seen    [][]byte  // keys of the concurrent run being formed, reused
	limited []bool    // which commands of a concurrent run hold a slot, reused
	ws      []*Writer // the reply buffers of a concurrent run, reused
	// wg waits for the commands of a concurrent run that workers run, or
	// that were started in their asynchronous form.
	wg sync.WaitGroup
	// startedDone ends a started command: its slot back, wg done;
	// startedUnlimited one that held no slot (it may block). Made once
	// per connection, by its first started command.
	startedDone, startedUnlimited func()
	// alone waits for the reply of a command started alone (startAlone),
	// which the goroutine of its round writes; aloneDone ends it, made
	// once per connection. broken: that write failed. try writes to the
	// socket without waiting; nil where it cannot (not TCP: TLS, tests'
	// pipes), and startAlone then starts nothing.
	try       *tryWriter
	alone     sync.WaitGroup
	aloneDone func()
	broken    atomic.Bool
	// lastReply is when the last such reply was written (Unix ns), kept
	// for the idle timeout only (reader.replied).
	lastReply atomic.Int64
	// countedOut: the client's slot was given back (Server.mu).
	countedOut bool
	// out writes the messages of the connection's subscriptions.
	out *outbox
	// blocking: the batch being run may block (serveBatch); werr: a
	// write of its replies failed before its end (writeOut).
	blocking bool
	werr     error
}

// New returns a Server that runs commands with h.
func New(h *commands.Handler, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{
		h:        h,
		opts:     opts,
		log:      log,
		flight:   newInflight(),
		ready:    make(chan struct{}),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
		released: make(chan struct{}),
		done:     make(chan struct{}),
		conns:    make(map[*connState]struct{}),
		work:     make(chan pipeTask),
	}
}

// ListenAndServe listens on the TCP address addr and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Shutdown or Close, and returns
// ErrServerClosed once every connection has been cleaned up. It takes
// ownership of ln. Serve may be called once.
func (s *Server) Serve(ln net.Listener) error {
	g, err := s.register(ln)
	if err != nil {
		ln.Close()
		return err
	}
	close(s.ready)
	stopReaper, reaped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reaped)
		s.reapWorkers(stopReaper)
	}()
	s.acceptLoop(g)
	s.connWG.Wait()
	// No connection is left to hand a worker a command: the workers end.
	close(stopReaper)
	<-reaped
	close(s.work)
	s.rejectWG.Wait()
	close(s.done)
	select {
	case <-s.closing:
		return ErrServerClosed
	default:
		return g.err
	}
}

func (s *Server) register(ln net.Listener) (*gateListener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closing:
		return nil, ErrServerClosed
	default:
	}
	if s.ln != nil {
		return nil, errServing
	}
	s.ln = &gateListener{Listener: ln, srv: s}
	return s.ln, nil
}

// Ready is closed once Serve is accepting connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the listener's address, or nil before Serve was called.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections, waits for the commands that are
// running to finish and their replies to be written, then closes every
// connection (their sessions end: blocking commands stop, session locks are
// released). Commands that arrive after Shutdown began are not run: their
// connection is closed, as Redis does when it shuts down. If ctx ends first,
// connections are closed at once and ctx's error is returned. Safe to call
// more than once, and together with Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()
	select {
	case <-s.flight.drain():
	case <-ctx.Done():
		s.release()
		return ctx.Err()
	}
	s.release()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting and closes every connection at once, without
// waiting for running commands. Serve returns once they have ended.
func (s *Server) Close() error {
	s.stopAccepting()
	s.release()
	return nil
}

// stopAccepting refuses new command batches, then closes the listener. A
// server that was never served is done at once.
func (s *Server) stopAccepting() {
	s.closeOnce.Do(func() {
		s.flight.drain()
		s.mu.Lock()
		defer s.mu.Unlock()
		defer close(s.stopped)
		// closing first: the gate must see it when Accept fails.
		close(s.closing)
		if s.ln == nil {
			close(s.done)
			return
		}
		s.ln.Listener.Close()
	})
}

// release lets the accept loop end (it then closes every connection)
// and ends every session, which stops commands blocked in a wait.
func (s *Server) release() {
	s.releaseOnce.Do(func() {
		close(s.released)
		s.mu.Lock()
		conns := make([]*connState, 0, len(s.conns))
		for st := range s.conns {
			conns = append(conns, st)
		}
		s.mu.Unlock()
		for _, st := range conns {
			st.nc.Close()
			s.h.CloseSession(st.sess)
		}
	})
}
