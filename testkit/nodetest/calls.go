package nodetest

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// One function per node command, for tests that act on a node directly
// (seeding, inspecting), outside any quorum round.

// SetNX runs the node command of that name on n, through quorum.Call.
func SetNX(ctx context.Context, n quorum.Node, key, token string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl})
	return rep.OK, rep.Err
}

// callSetNXMarked is a SET NX that marks a held key as waited for during mark.
func SetNXMarked(ctx context.Context, n quorum.Node, key, token string, ttl, mark time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.SetNX, Key: key, Token: token, TTL: ttl, Add: mark})
	return rep.OK, rep.Err
}

// Set runs the node command of that name on n, through quorum.Call.
func Set(ctx context.Context, n quorum.Node, key, token string, ttl time.Duration) error {
	return quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Set, Key: key, Token: token, TTL: ttl}).Err
}

// callCompareAndDelete deletes key if it holds token; with notify, the
// deletion of a marked key is announced.
func CompareAndDelete(ctx context.Context, n quorum.Node, key, token string, notify bool) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: token, Notify: notify})
	return rep.OK, rep.Err
}

// CompareAndExtend runs the node command of that name on n, through quorum.Call.
func CompareAndExtend(ctx context.Context, n quorum.Node, key, token string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.CompareAndExtend, Key: key, Token: token, TTL: ttl})
	return rep.OK, rep.Err
}

// callGet returns key's token, its remaining ttl and whether it is present.
func Get(ctx context.Context, n quorum.Node, key string) (string, time.Duration, bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Get, Key: key})
	return rep.Token, rep.TTL, rep.OK, rep.Err
}

// callDelete deletes key; with notify, as callCompareAndDelete.
func Delete(ctx context.Context, n quorum.Node, key string, notify bool) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Delete, Key: key, Notify: notify})
	return rep.OK, rep.Err
}

// Expire runs the node command of that name on n, through quorum.Call.
func Expire(ctx context.Context, n quorum.Node, key string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Expire, Key: key, TTL: ttl})
	return rep.OK, rep.Err
}

// SetNXAll runs the node command of that name on n, through quorum.Call.
func SetNXAll(ctx context.Context, n quorum.Node, keys []string, token string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.SetNXAll, Keys: keys, Token: token, TTL: ttl})
	return rep.OK, rep.Err
}

// ExtendAll runs the node command of that name on n, through quorum.Call.
func ExtendAll(ctx context.Context, n quorum.Node, keys []string, token string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.ExtendAll, Keys: keys, Token: token, TTL: ttl})
	return rep.OK, rep.Err
}

// ReleaseEach runs the node command of that name on n, through quorum.Call.
func ReleaseEach(ctx context.Context, n quorum.Node, keys []string, token string) ([]bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.ReleaseEach, Keys: keys, Token: token})
	return rep.Each, rep.Err
}

// callAddTTL adds add to key's ttl, capped at limit, if key holds token:
// the new ttl and whether it was done.
func AddTTL(ctx context.Context, n quorum.Node, key, token string, add, limit time.Duration) (time.Duration, bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.AddTTL, Key: key, Token: token, Add: add, Limit: limit})
	return rep.TTL, rep.OK, rep.Err
}

// callHoldOwner returns the token holding the round's hold, its holds and
// whether a hold is held for the round.
func HoldOwner(ctx context.Context, n quorum.Node, key, mark, prefix, token string, ttl time.Duration) (string, int64, bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.HoldOwner, Key: key, Mark: mark, Prefix: prefix, Token: token, TTL: ttl})
	return rep.Token, rep.N, rep.OK, rep.Err
}

// UndoHold runs the node command of that name on n, through quorum.Call.
func UndoHold(ctx context.Context, n quorum.Node, key, mark, keep string, ttl time.Duration) (bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.UndoHold, Key: key, Mark: mark, Token: keep, TTL: ttl})
	return rep.OK, rep.Err
}

// callUnhold returns the holds left and whether key held token.
func Unhold(ctx context.Context, n quorum.Node, key, token string) (int64, bool, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.Unhold, Key: key, Token: token})
	return rep.N, rep.OK, rep.Err
}

// ReadFence runs the node command of that name on n, through quorum.Call.
func ReadFence(ctx context.Context, n quorum.Node, key string) (int64, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.ReadFence, Key: key})
	return rep.N, rep.Err
}

// RaiseFence runs the node command of that name on n, through quorum.Call.
func RaiseFence(ctx context.Context, n quorum.Node, key string, v int64, ttl time.Duration) (int64, error) {
	rep := quorum.Call(ctx, n, quorum.Cmd{Kind: quorum.RaiseFence, Key: key, N: v, TTL: ttl})
	return rep.N, rep.Err
}

// watchServer has fn told of every look n takes at its server.
func WatchServer(n quorum.Node, fn func(quorum.ServerInfo)) { n.Watch(quorum.Watcher{Server: fn}) }

// WatchReleases has fn told of every release announced on n, in any
// database.
func WatchReleases(n quorum.Node, fn func(key string)) {
	n.Watch(quorum.Watcher{Released: func(_ int, key string) { fn(key) }})
}

// WatchInvalidated collects n's Invalidated reports, one key at a time,
// with a nil report (a flush, or the start of the reports) as "*".
func WatchInvalidated(n quorum.Node) <-chan string {
	ch := make(chan string, 256)
	n.Watch(quorum.Watcher{Invalidated: func(keys []string) {
		if keys == nil {
			ch <- "*"
		}
		for _, k := range keys {
			ch <- k
		}
	}})
	return ch
}
