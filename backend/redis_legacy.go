package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The methods of the node interface that quorum.Doer replaces: each is a
// thin wrapper over Do, so that every caller already travels the one
// transport. They go, all together, once the quorum calls Do only.

var (
	_ quorum.Node            = (*Redis)(nil)
	_ quorum.AsyncNode       = (*Redis)(nil)
	_ quorum.AsyncWaitMarker = (*Redis)(nil)
	_ quorum.ServerWatcher   = (*Redis)(nil)
	_ quorum.MultiNode       = (*Redis)(nil)
	_ quorum.TTLAdder        = (*Redis)(nil)
	_ quorum.Reentrant       = (*Redis)(nil)
	_ quorum.Fencer          = (*Redis)(nil)
	_ quorum.HeldRestorer    = (*Redis)(nil)
)

// call runs cmd within ctx. A ctx already done sends nothing: a SET NX
// given up before it left cannot land after the caller's release.
func (r *Redis) call(ctx context.Context, cmd quorum.Cmd) quorum.Reply {
	if err := ctxErr(ctx); err != nil {
		return quorum.Reply{Err: fmt.Errorf("not sent: %w", err)}
	}
	rep := quorum.Call(ctx, r, cmd)
	// Call returns ctx's own error when ctx ends first; a node error at
	// the same moment is made to match it too.
	if cerr := ctxErr(ctx); rep.Err != nil && cerr != nil && !errors.Is(rep.Err, cerr) {
		rep.Err = fmt.Errorf("%w (%w)", rep.Err, cerr)
	}
	return rep
}

// okCall is call for the operations that answer yes or no.
func (r *Redis) okCall(ctx context.Context, cmd quorum.Cmd) (bool, error) {
	rep := r.call(ctx, cmd)
	return rep.OK, rep.Err
}

// asyncDone adapts a yes/no callback to a Receiver.
type asyncDone func(bool, error)

func (done asyncDone) Receive(rep quorum.Reply) { done(rep.OK, rep.Err) }

// SetNX implements quorum.Node.
func (r *Redis) SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl})
}

// Set implements quorum.Node.
func (r *Redis) Set(ctx context.Context, key, token string, ttl time.Duration) error {
	return r.call(ctx, quorum.Cmd{Kind: quorum.Set, Key: key, Token: token, TTL: ttl}).Err
}

// CompareAndDelete implements quorum.Node.
func (r *Redis) CompareAndDelete(ctx context.Context, key, token string) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token})
}

// CompareAndExtend implements quorum.Node.
func (r *Redis) CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.CompareAndExtend, Key: key, Token: token, TTL: ttl})
}

// Get implements quorum.Node.
func (r *Redis) Get(ctx context.Context, key string) (string, time.Duration, bool, error) {
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.Get, Key: key})
	return rep.Token, rep.TTL, rep.OK, rep.Err
}

// Delete implements quorum.Node.
func (r *Redis) Delete(ctx context.Context, key string) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.Delete, Key: key})
}

// Expire implements quorum.Node.
func (r *Redis) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.Expire, Key: key, TTL: ttl})
}

// SetNXAsync implements quorum.AsyncNode.
func (r *Redis) SetNXAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	r.Do(deadline, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl}, asyncDone(done))
}

// CompareAndDeleteAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndDeleteAsync(deadline time.Time, key, token string, notify bool, done func(bool, error)) {
	r.Do(deadline, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token, Notify: notify}, asyncDone(done))
}

// CompareAndExtendAsync implements quorum.AsyncNode.
func (r *Redis) CompareAndExtendAsync(deadline time.Time, key, token string, ttl time.Duration, done func(bool, error)) {
	r.Do(deadline, quorum.Cmd{Kind: quorum.CompareAndExtend, Key: key, Token: token, TTL: ttl}, asyncDone(done))
}

// GetAsync implements quorum.AsyncNode.
func (r *Redis) GetAsync(deadline time.Time, key string, done func(string, time.Duration, bool, error)) {
	r.Do(deadline, quorum.Cmd{Kind: quorum.Get, Key: key}, quorum.ReceiverFunc(func(rep quorum.Reply) {
		done(rep.Token, rep.TTL, rep.OK, rep.Err)
	}))
}

// SetNXMarkedAsync implements quorum.AsyncWaitMarker.
func (r *Redis) SetNXMarkedAsync(deadline time.Time, key, token string, ttl, mark time.Duration, done func(bool, error)) {
	if mark <= 0 {
		done(false, ErrInvalidTTL)
		return
	}
	r.Do(deadline, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl, Add: mark}, asyncDone(done))
}

// CompareAndDeleteNotify implements quorum.ReleaseNotifier.
func (r *Redis) CompareAndDeleteNotify(ctx context.Context, key, token string) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token, Notify: true})
}

// DeleteNotify implements quorum.ReleaseNotifier.
func (r *Redis) DeleteNotify(ctx context.Context, key string) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.Delete, Key: key, Notify: true})
}

// SetNXMarked implements quorum.WaitMarker.
func (r *Redis) SetNXMarked(ctx context.Context, key, token string, ttl, mark time.Duration) (bool, error) {
	if mark <= 0 {
		return false, ErrInvalidTTL
	}
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl, Add: mark})
}

// WatchReleases implements quorum.ReleaseNotifier.
func (r *Redis) WatchReleases(fn func(key string)) { r.Watch(quorum.Watcher{Released: fn}) }

// WatchServer implements quorum.ServerWatcher.
func (r *Redis) WatchServer(fn func(quorum.ServerInfo)) { r.Watch(quorum.Watcher{Server: fn}) }

// SetNXAll implements quorum.MultiNode.
func (r *Redis) SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.SetNXAll, Keys: keys, Token: token, TTL: ttl})
}

// ExtendAll implements quorum.MultiNode.
func (r *Redis) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.ExtendAll, Keys: keys, Token: token, TTL: ttl})
}

// ReleaseEach implements quorum.MultiNode.
func (r *Redis) ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error) {
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.ReleaseEach, Keys: keys, Token: token})
	return rep.Each, rep.Err
}

// CompareAndAddTTL implements quorum.TTLAdder.
func (r *Redis) CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error) {
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.AddTTL, Key: key, Token: token, Add: add, Limit: limit})
	return rep.TTL, rep.OK, rep.Err
}

// holdsKeyOf checks that holdsKey is where Do keeps key's hold count.
func holdsKeyOf(key, holdsKey string) error {
	if holdsKey != quorum.HoldsKey(key) {
		return fmt.Errorf("backend: holds key %q is not quorum.HoldsKey(%q)", holdsKey, key)
	}
	return nil
}

// HoldOwner implements quorum.Reentrant.
func (r *Redis) HoldOwner(ctx context.Context, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (string, int64, bool, error) {
	if err := holdsKeyOf(key, holdsKey); err != nil {
		return "", 0, false, err
	}
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.HoldOwner, Key: key, Mark: markKey, Prefix: prefix, Token: token, TTL: ttl})
	return rep.Token, rep.N, rep.OK, rep.Err
}

// UndoHold implements quorum.Reentrant.
func (r *Redis) UndoHold(ctx context.Context, key, holdsKey, markKey, keep string, ttl time.Duration) (bool, error) {
	if err := holdsKeyOf(key, holdsKey); err != nil {
		return false, err
	}
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.UndoHold, Key: key, Mark: markKey, Token: keep, TTL: ttl})
}

// Unhold implements quorum.Reentrant.
func (r *Redis) Unhold(ctx context.Context, key, holdsKey, token string) (int64, bool, error) {
	if err := holdsKeyOf(key, holdsKey); err != nil {
		return 0, false, err
	}
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.Unhold, Key: key, Token: token})
	return rep.N, rep.OK, rep.Err
}

// ExtendHeld implements quorum.Reentrant.
func (r *Redis) ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error) {
	if err := holdsKeyOf(key, holdsKey); err != nil {
		return false, err
	}
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.ExtendHeld, Key: key, Token: token, TTL: ttl})
}

// RestoreHeld implements quorum.HeldRestorer.
func (r *Redis) RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error) {
	if err := holdsKeyOf(key, holdsKey); err != nil {
		return false, err
	}
	return r.okCall(ctx, quorum.Cmd{Kind: quorum.RestoreHeld, Key: key, Token: token, N: holds, TTL: ttl})
}

// ReadFence implements quorum.Fencer.
func (r *Redis) ReadFence(ctx context.Context, key string) (int64, error) {
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.ReadFence, Key: key})
	return rep.N, rep.Err
}

// RaiseFence implements quorum.Fencer.
func (r *Redis) RaiseFence(ctx context.Context, key string, v int64, ttl time.Duration) (int64, error) {
	rep := r.call(ctx, quorum.Cmd{Kind: quorum.RaiseFence, Key: key, N: v, TTL: ttl})
	return rep.N, rep.Err
}
