package quorum

import (
	"context"
	"fmt"
	"time"
)

// The old node interfaces, kept until every node implements Doer.

// Node is one independent lock backend (a Redis master, or an in-memory
// node in embedded mode). Every method must honour ctx's deadline: the
// cluster gives each call its own per-node timeout and counts a call that
// has not returned by then as a "no" vote.
//
// A ttl is always > 0: the cluster never asks a node to store a key without
// an expiry.
type Node interface {
	// Name identifies the node in errors, logs and INFO (e.g. "127.0.0.1:6379").
	Name() string
	// SetNX stores key=token with ttl if key is absent. It reports whether it
	// stored it (false: the key is held, by any token).
	SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Set stores key=token with ttl unconditionally (a forced takeover).
	Set(ctx context.Context, key, token string, ttl time.Duration) error
	// CompareAndDelete deletes key if and only if it holds token, atomically.
	CompareAndDelete(ctx context.Context, key, token string) (bool, error)
	// CompareAndExtend sets key's ttl if and only if it holds token, atomically.
	CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Get returns the token stored at key and its remaining ttl; ok is false
	// when the key is absent.
	Get(ctx context.Context, key string) (token string, pttl time.Duration, ok bool, err error)
	// Delete removes key unconditionally and reports whether it existed.
	Delete(ctx context.Context, key string) (bool, error)
	// Expire sets key's ttl unconditionally and reports whether the key existed.
	Expire(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Close releases the node's resources. Safe to call twice.
	Close() error
}

// AsyncNode is an optional Node extension for nodes that can start a call
// and report its answer later, without a goroutine or a context per call.
// When every node of a Cluster implements it, the hot operations (acquire,
// extend, release, get) start each node's call from the caller's goroutine
// and collect the answers as they come; otherwise each node call runs on a
// goroutine of its own, under a context with the node timeout.
//
// Each method must call done exactly once, from any goroutine, possibly
// before it returns; done does not block. The node enforces deadline
// itself: an answer it has not had by then is an error that matches
// context.DeadlineExceeded, reported soon after deadline. The answers and
// errors are those of the Node method of the same name.
//
// A type that embeds an AsyncNode and overrides its Node methods (a test
// double, a wrapper adding faults or metrics) must override these too, or
// hide them: the Cluster calls these instead of the Node methods.
type AsyncNode interface {
	Node
	SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error))
	// CompareAndDeleteAsync is CompareAndDelete; with notify, it is
	// ReleaseNotifier's CompareAndDeleteNotify where the node is one.
	CompareAndDeleteAsync(deadline time.Time, key, token string, notify bool, done func(bool, error))
	CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error))
	GetAsync(deadline time.Time, key string, done func(token string, pttl time.Duration, ok bool, err error))
}

// MultiNode is implemented by nodes that can lock several keys as one:
// node-redlock's multi-resource locks must be all-or-nothing on every node,
// or two clients locking overlapping sets could each hold part of the other's.
// It is optional so that simple Node implementations (and test fakes) need
// not provide it; the Cluster methods that need it fail with
// ErrUnsupported when a node lacks it.
type MultiNode interface {
	// SetNXAll stores every key=token with ttl if and only if none of the
	// keys is present, atomically.
	SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error)
	// ExtendAll re-sets every key to token with ttl if and only if all of
	// them hold token, atomically.
	ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error)
	// ReleaseEach deletes each key that holds token, atomically, and
	// reports per key whether it deleted it.
	ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error)
}

// TTLAdder is implemented by nodes that can lengthen a key's remaining ttl
// by a relative amount, as redis-py's Lock.extend does by default. It is
// optional; ExtendAdd fails with ErrUnsupported when a node lacks it.
type TTLAdder interface {
	// CompareAndAddTTL adds add to key's remaining ttl if and only if key
	// holds token and has an expiry, atomically, capping the result at
	// limit. It returns the new ttl.
	CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error)
}

// Reentrant is the optional Node extension that LOCK … OWNER needs. Nodes
// without it answer every reentrant operation with ErrUnsupported (a failed
// node within the vote).
type Reentrant interface {
	// HoldOwner is one node's part of a round of LockOwner, atomically: if
	// key holds a token that starts with prefix, add one hold to it (count
	// at holdsKey) and raise key's ttl to at least ttl; if key is absent,
	// set it to token with one hold. Either way it records at markKey (for
	// ttl) which token got the hold, so that UndoHold can take back exactly
	// this hold. If markKey already exists, the round was undone (nothing
	// is added, unless the undo kept a granted token that key still holds:
	// then the hold goes to it), or this is a repeat of the same call (its
	// recorded hold is returned). ok is false when no hold is held for the
	// round.
	HoldOwner(ctx context.Context, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (held string, holds int64, ok bool, err error)
	// UndoHold takes back the hold recorded at markKey, unless it went to
	// keep (a granted token; "" when nothing was granted). Where the round
	// has not arrived, it leaves a mark (for ttl) that lets a HoldOwner of
	// the round still on its way add a hold to keep only, or nothing. It
	// reports whether a hold was taken back. Repeating it changes nothing.
	UndoHold(ctx context.Context, key, holdsKey, markKey, keep string, ttl time.Duration) (bool, error)
	// Unhold: if key holds token, drop one hold, and delete key and
	// holdsKey when none is left, atomically. remaining is the holds left
	// (0: deleted); ok is false when key does not hold token.
	Unhold(ctx context.Context, key, holdsKey, token string) (remaining int64, ok bool, err error)
	// ExtendHeld: if key holds token, raise the ttl of key and of holdsKey
	// to ttl where it is shorter (never shorten it: another hold of the
	// owner may have been granted a longer validity).
	ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error)
}

// Fencer is the optional Node extension that LOCK … FENCE needs.
type Fencer interface {
	// ReadFence returns the counter at key, 0 when absent.
	ReadFence(ctx context.Context, key string) (int64, error)
	// RaiseFence stores v at key unless the key holds more, sets its ttl,
	// and returns the value the key holds afterwards, atomically.
	RaiseFence(ctx context.Context, key string, v int64, ttl time.Duration) (int64, error)
}

// ServerWatcher is an optional Node extension for nodes that can identify
// the server behind them. The Cluster uses it for the restart quarantine
// (the "delayed restart" rule) and to refuse nodes that are not
// independent nodes.
type ServerWatcher interface {
	// WatchServer calls fn with every look the node takes at its server
	// until the node is closed: on each new connection, before the
	// connection serves any operation, and periodically. fn does not block.
	WatchServer(fn func(ServerInfo))
}

// ReleaseNotifier is an optional Node extension for nodes that can tell
// waiters that a lock was released, wherever the release came from (this
// proxy or any other one in front of the same backend). A Cluster whose
// nodes implement it wakes a blocking acquire as soon as the key is
// released instead of at its next retry.
//
// Notifications are hints, never votes: one may be lost (a reconnect, a
// node that is down), and a waiter then falls back to its retry jitter. A
// node that is also a WaitMarker notifies only releases of marked keys.
type ReleaseNotifier interface {
	// CompareAndDeleteNotify is CompareAndDelete that, when it deletes,
	// also notifies every watcher of the node, within the same round trip.
	CompareAndDeleteNotify(ctx context.Context, key, token string) (bool, error)
	// DeleteNotify is Delete that notifies like CompareAndDeleteNotify.
	DeleteNotify(ctx context.Context, key string) (bool, error)
	// WatchReleases calls fn with the key of every notified release on the
	// node until the node is closed. fn does not block.
	WatchReleases(fn func(key string))
}

// WaitMarker is an optional extension of a ReleaseNotifier node that
// notifies only the releases of keys a waiter has marked, so that an
// uncontended release costs neither the node nor the proxies watching it
// a notification. A blocking acquire marks its key in every round after
// its first, as part of that round's SET NX: the two are one atomic step
// on the node, so a release there comes either before it (and the SET
// finds the key free) or after it (and notifies).
type WaitMarker interface {
	ReleaseNotifier
	// SetNXMarked is SetNX that, when key is held, marks key as waited for
	// during mark (never shortening an earlier mark): until then its
	// release notifies.
	SetNXMarked(ctx context.Context, key, token string, ttl, mark time.Duration) (bool, error)
}

// AsyncWaitMarker is WaitMarker for an AsyncNode; a Cluster of AsyncNodes
// calls SetNXMarkedAsync instead of SetNXMarked.
type AsyncWaitMarker interface {
	WaitMarker
	SetNXMarkedAsync(deadline time.Time, key, token string, ttl, mark time.Duration, done func(bool, error))
}

// HeldRestorer is the optional Node extension that restores an owner lock
// with its hold count. A node without it gets no restore of owner locks.
type HeldRestorer interface {
	// RestoreHeld: if key is absent, store key=token and, at holdsKey,
	// the hold count holds, both with ttl, atomically. It reports whether
	// it stored them (false: key exists, whatever it holds).
	RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error)
}

// doerOf runs an old-style node as a Doer: each Cmd on a goroutine of its
// own, under a context with the deadline.
func doerOf(n Node) Doer {
	if d, ok := n.(Doer); ok {
		return d
	}
	return legacyDoer{n}
}

type legacyDoer struct{ Node }

func (l legacyDoer) Do(deadline time.Time, cmd Cmd, r Receiver) {
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		r.Receive(l.call(ctx, cmd))
	}()
}

func (l legacyDoer) Watch(w Watcher) bool {
	if rn, ok := l.Node.(ReleaseNotifier); ok && w.Released != nil {
		rn.WatchReleases(w.Released)
	}
	sw, ok := l.Node.(ServerWatcher)
	if ok && w.Server != nil {
		sw.WatchServer(w.Server)
	}
	return ok
}

func (l legacyDoer) call(ctx context.Context, cmd Cmd) Reply {
	n := l.Node
	var rep Reply
	switch cmd.Kind {
	case SetNX:
		if m, ok := n.(WaitMarker); ok && cmd.Add > 0 {
			rep.OK, rep.Err = m.SetNXMarked(ctx, cmd.Key, cmd.Token, cmd.TTL, cmd.Add)
		} else {
			rep.OK, rep.Err = n.SetNX(ctx, cmd.Key, cmd.Token, cmd.TTL)
		}
	case Set:
		rep.Err = n.Set(ctx, cmd.Key, cmd.Token, cmd.TTL)
		rep.OK = rep.Err == nil
	case CompareAndDelete:
		if rn, ok := n.(ReleaseNotifier); ok && cmd.Notify {
			rep.OK, rep.Err = rn.CompareAndDeleteNotify(ctx, cmd.Key, cmd.Token)
		} else {
			rep.OK, rep.Err = n.CompareAndDelete(ctx, cmd.Key, cmd.Token)
		}
		rep.N = 1
		if !rep.OK && rep.Err == nil {
			_, _, held, err := n.Get(ctx, cmd.Key)
			rep.Err = err
			rep.N = 0
			if !held {
				rep.N = -1
			}
		}
	case CompareAndExtend:
		rep.OK, rep.Err = n.CompareAndExtend(ctx, cmd.Key, cmd.Token, cmd.TTL)
	case Get:
		rep.Token, rep.TTL, rep.OK, rep.Err = n.Get(ctx, cmd.Key)
	case Delete:
		if rn, ok := n.(ReleaseNotifier); ok && cmd.Notify {
			rep.OK, rep.Err = rn.DeleteNotify(ctx, cmd.Key)
		} else {
			rep.OK, rep.Err = n.Delete(ctx, cmd.Key)
		}
	case Expire:
		rep.OK, rep.Err = n.Expire(ctx, cmd.Key, cmd.TTL)
	case AddTTL:
		if a, ok := n.(TTLAdder); ok {
			rep.TTL, rep.OK, rep.Err = a.CompareAndAddTTL(ctx, cmd.Key, cmd.Token, cmd.Add, cmd.Limit)
		} else {
			rep.Err = ErrUnsupported
		}
	case ExtendOrSetNX:
		rep.OK, rep.Err = n.CompareAndExtend(ctx, cmd.Key, cmd.Token, cmd.TTL)
		rep.N = 1
		if !rep.OK && rep.Err == nil {
			rep.OK, rep.Err = n.SetNX(ctx, cmd.Key, cmd.Token, cmd.TTL)
			rep.N = 2
		}
	case SetNXAll, ExtendAll, ReleaseEach:
		m, ok := n.(MultiNode)
		if !ok {
			rep.Err = ErrUnsupported
			break
		}
		switch cmd.Kind {
		case SetNXAll:
			rep.OK, rep.Err = m.SetNXAll(ctx, cmd.Keys, cmd.Token, cmd.TTL)
		case ExtendAll:
			rep.OK, rep.Err = m.ExtendAll(ctx, cmd.Keys, cmd.Token, cmd.TTL)
		default:
			rep.Each, rep.Err = m.ReleaseEach(ctx, cmd.Keys, cmd.Token)
		}
	case HoldOwner, UndoHold, Unhold, ExtendHeld:
		rn, ok := n.(Reentrant)
		if !ok {
			rep.Err = ErrUnsupported
			break
		}
		hk := HoldsKey(cmd.Key)
		switch cmd.Kind {
		case HoldOwner:
			rep.Token, rep.N, rep.OK, rep.Err = rn.HoldOwner(ctx, cmd.Key, hk, cmd.Mark, cmd.Prefix, cmd.Token, cmd.TTL)
		case UndoHold:
			rep.OK, rep.Err = rn.UndoHold(ctx, cmd.Key, hk, cmd.Mark, cmd.Token, cmd.TTL)
		case Unhold:
			rep.N, rep.OK, rep.Err = rn.Unhold(ctx, cmd.Key, hk, cmd.Token)
		default:
			rep.OK, rep.Err = rn.ExtendHeld(ctx, cmd.Key, hk, cmd.Token, cmd.TTL)
		}
	case RestoreHeld:
		if cmd.N <= 1 {
			rep.OK, rep.Err = n.SetNX(ctx, cmd.Key, cmd.Token, cmd.TTL)
		} else if hr, ok := n.(HeldRestorer); ok {
			rep.OK, rep.Err = hr.RestoreHeld(ctx, cmd.Key, HoldsKey(cmd.Key), cmd.Token, cmd.N, cmd.TTL)
		}
	case ReadFence, RaiseFence:
		f, ok := n.(Fencer)
		if !ok {
			rep.Err = ErrUnsupported
			break
		}
		if cmd.Kind == ReadFence {
			rep.N, rep.Err = f.ReadFence(ctx, cmd.Key)
		} else {
			rep.N, rep.Err = f.RaiseFence(ctx, cmd.Key, cmd.N, cmd.TTL)
		}
		if rep.Err == nil && (rep.N < 0 || rep.N > MaxFence) {
			rep = Reply{Err: fmt.Errorf("%w: %d", ErrBadFence, rep.N)}
		}
	}
	return rep
}
