package commands

import (
	"context"
	"sync"
	"sync/atomic"
)

// Session is the per-connection state that commands read and change:
// protocol version, authentication, names, and the locks bound to the
// connection. The proxy creates one per connection with Handler.NewSession
// and ends it with Handler.CloseSession.
type Session struct {
	ID   int64
	Addr string

	// ctx is cancelled when the connection closes, so a blocking command
	// (LOCK … WAIT) stops waiting for a client that is gone.
	ctx    context.Context
	cancel context.CancelFunc

	// proto and db are read by every command, so without the lock; they
	// change under it too, so that what it guards reads them consistently.
	proto atomic.Int32
	db    atomic.Int32 // the database (SELECT) that the connection's locks live in

	mu      sync.Mutex
	authed  bool
	name    string
	libName string
	libVer  string
	quit    bool
	// push writes an out-of-band RESP3 push message to the connection;
	// nil until the proxy sets it (SetPush).
	push func(args ...string)
	// subs are the connection's pub/sub subscriptions.
	subs sessionSubs
	// tracking is its client-side caching (CLIENT TRACKING).
	tracking sessionTracking
	// txn is its transaction between MULTI and EXEC; nil outside one.
	// inTxn says whether there is one, for the readers without the lock.
	txn   *txnState
	inTxn atomic.Bool
	// watch is its WATCH; nil when it watches nothing.
	watch *watchState

	// kept holds the keys and tokens its lock commands keep.
	kept keptStrings
}

// SetPush gives the session a way to send the client a RESP3 push message
// (a ">" array of bulk strings) out of band, between replies. push must be
// safe to call from any goroutine and must not block for long.
func (s *Session) SetPush(push func(args ...string)) {
	s.mu.Lock()
	s.push = push
	s.mu.Unlock()
}

// pushLost tells a RESP3 client that its kept lock on key was lost, as
// the push ["redlockd", "lock-lost", key]. A RESP2 connection has no
// out-of-band messages: its client learns it from RENEW/UNLOCK/GET.
func (s *Session) pushLost(key string) {
	s.mu.Lock()
	push, resp3 := s.push, s.proto.Load() == 3
	s.mu.Unlock()
	if push != nil && resp3 {
		push("redlockd", "lock-lost", key)
	}
}

// Context is cancelled when the connection closes.
func (s *Session) Context() context.Context { return s.ctx }

// Unbound is the context of work that runs to its end whether or not the
// client stays (a release, a hand-over whose outcome its books follow):
// Context without its cancellation. Context carries no values, so this
// is the background, which costs no allocation per request.
func (s *Session) Unbound() context.Context { return context.Background() }

// HangUp tells the session that its client is gone: a blocking command
// stops at once and acquires nothing. The session still ends with
// Handler.CloseSession, once the proxy has no command of it running.
func (s *Session) HangUp() { s.cancel() }

// Proto is the connection's protocol version, 2 or 3.
func (s *Session) Proto() int { return int(s.proto.Load()) }

func (s *Session) setProto(p int) {
	s.mu.Lock()
	s.proto.Store(int32(p))
	s.mu.Unlock()
}

// DB is the database the connection's locks live in (SELECT's index, 0
// to quorum.DBs-1).
func (s *Session) DB() int { return int(s.db.Load()) }

func (s *Session) setDB(n int) {
	s.mu.Lock()
	s.db.Store(int32(n))
	s.mu.Unlock()
}

// Authenticated reports whether the connection may run commands.
func (s *Session) Authenticated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authed
}

func (s *Session) setAuthenticated(v bool) {
	s.mu.Lock()
	s.authed = v
	s.mu.Unlock()
}

// Name is the name set with CLIENT SETNAME or HELLO … SETNAME.
func (s *Session) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

func (s *Session) setName(n string) {
	s.mu.Lock()
	s.name = n
	s.mu.Unlock()
}

// Quit reports whether the client asked to close the connection (QUIT):
// the proxy closes it once the reply is written.
func (s *Session) Quit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quit
}
