package commands

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/pubsub"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/tracking"
)

// Options configure a Handler. Zero values take the documented defaults.
type Options struct {
	// Password, when set, must be given with AUTH (or HELLO … AUTH) before
	// any other command. Default: none.
	Password string
	// MaxTTL is the largest ttl a command may ask for. Default 60s.
	MaxTTL time.Duration
	// MaxWait is the largest WAIT a LOCK may ask for: a longer one is an
	// error rather than a connection held for weeks. Default 1h.
	MaxWait time.Duration
	// SessionTTL is the backend ttl of session locks (SET … NX without
	// expiry), renewed every third of it. Default 30s.
	SessionTTL time.Duration
	// Version is reported by INFO and HELLO. Default "dev".
	Version string
	// Logger receives state changes, never one line per command. Default slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told of every command run (for metrics),
	// and of the quorum rounds of the commands Start runs (see
	// Observer.CommandDone) in place of the cluster's Observer: set it to
	// the same metrics. Default nil: nothing is reported.
	Observer Observer
	// Info, when set, adds its figures to INFO. Default nil.
	Info InfoSource
}

func (o *Options) setDefaults() {
	if o.MaxTTL <= 0 {
		o.MaxTTL = 60 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = time.Hour
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 30 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Handler is the command table bound to one lock cluster. It is safe for
// concurrent use by many sessions.
type Handler struct {
	cluster *quorum.Cluster
	opts    Options
	started time.Time

	nextID   atomic.Int64
	sessions sync.Map // int64 -> *Session
	nconns   atomic.Int64
	stats    stats
	bound    bindings // locks bound to a connection (session_locks.go)
	scripts  *scriptCache
	hub      *pubsub.Hub
	password atomic.Pointer[string] // Options.Password, then SetPassword's
	tracking *tracking.Table
}

// New returns the command table over cluster.
func New(cluster *quorum.Cluster, opts Options) *Handler {
	opts.setDefaults()
	hub := pubsub.New(cluster, pubsub.Options{})
	h := &Handler{cluster: cluster, opts: opts, started: time.Now(), scripts: newScriptCache(), hub: hub,
		tracking: tracking.New(cluster)}
	h.SetPassword(opts.Password)
	return h
}

// clusterOf is the lock service of session s's database (SELECT): every
// lock a command of s takes, reads or releases goes through it. It is read
// once per command, where the command starts.
func (h *Handler) clusterOf(s *Session) *quorum.Cluster { return h.cluster.DB(s.DB()) }

// NewSession starts the state of one client connection from addr.
func (h *Handler) NewSession(addr string) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		ID:     h.nextID.Add(1),
		Addr:   addr,
		ctx:    ctx,
		cancel: cancel,
		authed: h.currentPassword() == "",
	}
	s.proto.Store(2)
	h.sessions.Store(s.ID, s)
	h.nconns.Add(1)
	return s
}

// CloseSession ends a connection's state: its blocking commands stop and
// the locks bound to it are released.
func (h *Handler) CloseSession(s *Session) {
	if _, loaded := h.sessions.LoadAndDelete(s.ID); !loaded {
		return
	}
	s.cancel()
	h.trackingOff(s)
	h.endTxn(s)
	h.unsubscribeAll(s)
	h.releaseSessionLocks(s)
	h.nconns.Add(-1)
}
