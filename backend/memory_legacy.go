package backend

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The quorum.Node methods and optional interfaces of the in-memory node,
// each a thin wrapper over the command it stands for, kept until the
// quorum runs on Do alone. They announce every release they make (loud):
// that quorum never marks an in-memory node's keys.

var (
	_ quorum.Node            = (*Memory)(nil)
	_ quorum.MultiNode       = (*Memory)(nil)
	_ quorum.TTLAdder        = (*Memory)(nil)
	_ quorum.Reentrant       = (*Memory)(nil)
	_ quorum.Fencer          = (*Memory)(nil)
	_ quorum.HeldRestorer    = (*Memory)(nil)
	_ quorum.ReleaseNotifier = (*Memory)(nil)
)

// call runs c within ctx: a call whose ctx is already done does not run,
// and a delayed one whose ctx ends first is dropped.
func (m *Memory) call(ctx context.Context, c memCmd) quorum.Reply {
	if c.holds == "" {
		c.holds = quorum.HoldsKey(c.Key)
	}
	if err := ctx.Err(); err != nil {
		m.mu.Lock()
		m.calls[memKindName(c.Kind)]++
		m.mu.Unlock()
		return quorum.Reply{Err: err}
	}
	deadline, _ := ctx.Deadline()
	ch := make(chan quorum.Reply, 1)
	m.start(ctx, deadline, c, quorum.ReceiverFunc(func(r quorum.Reply) { ch <- r }))
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return quorum.Reply{Err: ctx.Err()}
	}
}

func (m *Memory) cmd(ctx context.Context, c quorum.Cmd) quorum.Reply {
	return m.call(ctx, memCmd{Cmd: c, loud: true})
}

// SetNX implements quorum.Node.
func (m *Memory) SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl})
	return r.OK, r.Err
}

// Set implements quorum.Node.
func (m *Memory) Set(ctx context.Context, key, token string, ttl time.Duration) error {
	return m.cmd(ctx, quorum.Cmd{Kind: quorum.Set, Key: key, Token: token, TTL: ttl}).Err
}

// CompareAndDelete implements quorum.Node.
func (m *Memory) CompareAndDelete(ctx context.Context, key, token string) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token})
	return r.OK, r.Err
}

// CompareAndExtend implements quorum.Node.
func (m *Memory) CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.CompareAndExtend, Key: key, Token: token, TTL: ttl})
	return r.OK, r.Err
}

// Get implements quorum.Node.
func (m *Memory) Get(ctx context.Context, key string) (token string, pttl time.Duration, ok bool, err error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.Get, Key: key})
	return r.Token, r.TTL, r.OK, r.Err
}

// Delete implements quorum.Node.
func (m *Memory) Delete(ctx context.Context, key string) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.Delete, Key: key})
	return r.OK, r.Err
}

// Expire implements quorum.Node.
func (m *Memory) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.Expire, Key: key, TTL: ttl})
	return r.OK, r.Err
}

// CompareAndDeleteNotify implements quorum.ReleaseNotifier. Unlike a
// Redis node it is no quorum.WaitMarker and tells of every release.
func (m *Memory) CompareAndDeleteNotify(ctx context.Context, key, token string) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token, Notify: true})
	return r.OK, r.Err
}

// DeleteNotify implements quorum.ReleaseNotifier.
func (m *Memory) DeleteNotify(ctx context.Context, key string) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.Delete, Key: key, Notify: true})
	return r.OK, r.Err
}

// WatchReleases implements quorum.ReleaseNotifier.
func (m *Memory) WatchReleases(fn func(key string)) { m.releases.add(fn) }

// SetNXAll implements quorum.MultiNode.
func (m *Memory) SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.SetNXAll, Keys: keys, Token: token, TTL: ttl})
	return r.OK, r.Err
}

// ExtendAll implements quorum.MultiNode.
func (m *Memory) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.ExtendAll, Keys: keys, Token: token, TTL: ttl})
	return r.OK, r.Err
}

// ReleaseEach implements quorum.MultiNode.
func (m *Memory) ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.ReleaseEach, Keys: keys, Token: token})
	return r.Each, r.Err
}

// CompareAndAddTTL implements quorum.TTLAdder.
func (m *Memory) CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.AddTTL, Key: key, Token: token, Add: add, Limit: limit})
	return r.TTL, r.OK, r.Err
}

// HoldOwner implements quorum.Reentrant.
func (m *Memory) HoldOwner(ctx context.Context, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (held string, holds int64, ok bool, err error) {
	c := quorum.Cmd{Kind: quorum.HoldOwner, Key: key, Mark: markKey, Prefix: prefix, Token: token, TTL: ttl}
	r := m.call(ctx, memCmd{Cmd: c, holds: holdsKey, loud: true})
	return r.Token, r.N, r.OK, r.Err
}

// UndoHold implements quorum.Reentrant.
func (m *Memory) UndoHold(ctx context.Context, key, holdsKey, markKey, keep string, ttl time.Duration) (bool, error) {
	c := quorum.Cmd{Kind: quorum.UndoHold, Key: key, Mark: markKey, Token: keep, TTL: ttl}
	r := m.call(ctx, memCmd{Cmd: c, holds: holdsKey, loud: true})
	return r.OK, r.Err
}

// Unhold implements quorum.Reentrant.
func (m *Memory) Unhold(ctx context.Context, key, holdsKey, token string) (remaining int64, ok bool, err error) {
	c := quorum.Cmd{Kind: quorum.Unhold, Key: key, Token: token}
	r := m.call(ctx, memCmd{Cmd: c, holds: holdsKey, loud: true})
	return r.N, r.OK, r.Err
}

// ExtendHeld implements quorum.Reentrant.
func (m *Memory) ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error) {
	c := quorum.Cmd{Kind: quorum.ExtendHeld, Key: key, Token: token, TTL: ttl}
	r := m.call(ctx, memCmd{Cmd: c, holds: holdsKey, loud: true})
	return r.OK, r.Err
}

// RestoreHeld implements quorum.HeldRestorer.
func (m *Memory) RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error) {
	c := quorum.Cmd{Kind: quorum.RestoreHeld, Key: key, Token: token, N: holds, TTL: ttl}
	r := m.call(ctx, memCmd{Cmd: c, holds: holdsKey, loud: true})
	return r.OK, r.Err
}

// ReadFence implements quorum.Fencer.
func (m *Memory) ReadFence(ctx context.Context, key string) (int64, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.ReadFence, Key: key})
	return r.N, r.Err
}

// RaiseFence implements quorum.Fencer.
func (m *Memory) RaiseFence(ctx context.Context, key string, v int64, ttl time.Duration) (int64, error) {
	r := m.cmd(ctx, quorum.Cmd{Kind: quorum.RaiseFence, Key: key, N: v, TTL: ttl})
	return r.N, r.Err
}
