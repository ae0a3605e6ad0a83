package backend

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The reentrant-lock and fencing extensions of the in-memory node
// (quorum.Reentrant, quorum.Fencer). Hold counts and fence counters are
// entries like any other, stored as text the way a Redis node stores them.

// HoldOwner implements quorum.Reentrant.
func (m *Memory) HoldOwner(ctx context.Context, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (held string, holds int64, ok bool, err error) {
	if ttl <= 0 {
		return "", 0, false, ErrInvalidTTL
	}
	err = m.do(ctx, "HoldOwner", func(now time.Time) {
		held, holds, ok = m.holdOwner(now, key, holdsKey, markKey, prefix, token, ttl)
	})
	return held, holds, ok, err
}

// holdOwner is HoldOwner's step; the caller holds m.mu.
func (m *Memory) holdOwner(now time.Time, key, holdsKey, markKey, prefix, token string, ttl time.Duration) (string, int64, bool) {
	e, live := m.lookup(key, now)
	if mk, marked := m.lookup(markKey, now); marked {
		only, keepOnly := strings.CutPrefix(mk.token, keepMark)
		switch {
		case keepOnly && (!live || e.token != only):
			return "", 0, false // undone; the granted token is gone
		case keepOnly:
			// undone before it came, but the hold goes to the granted token
		case mk.token == undoneMark || !live || e.token != mk.token:
			return "", 0, false
		default:
			return e.token, m.holdsOf(holdsKey, e.token, now), true // a repeat
		}
	}
	switch {
	case !live:
		e = entry{token: token, expires: now.Add(ttl)}
	case strings.HasPrefix(e.token, prefix):
		e.expires = later(e.expires, now.Add(ttl))
	default:
		return "", 0, false
	}
	n := int64(1)
	if live {
		n = m.holdsOf(holdsKey, e.token, now) + 1
	}
	m.store(key, e.token, e.expires)
	m.store(holdsKey, quorum.FormatHolds(e.token, n), e.expires)
	m.store(markKey, e.token, now.Add(ttl))
	return e.token, n, true
}

// The marks UndoHold leaves, as the Redis node's scripts do: undoneMark
// once a round is undone; keepMark+token when it was undone before it
// arrived while token was granted (it may add a hold to token only).
const (
	undoneMark = "-"
	keepMark   = "?"
)

// UndoHold implements quorum.Reentrant.
func (m *Memory) UndoHold(ctx context.Context, key, holdsKey, markKey, keep string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var undone, freed bool
	err := m.do(ctx, "UndoHold", func(now time.Time) {
		mk, marked := m.lookup(markKey, now)
		switch {
		case marked && (mk.token == undoneMark || mk.token == keep || strings.HasPrefix(mk.token, keepMark)):
			return
		case !marked && keep != "":
			m.store(markKey, keepMark+keep, now.Add(ttl))
			return
		}
		m.store(markKey, undoneMark, now.Add(ttl))
		if !marked {
			return
		}
		e, live := m.lookup(key, now)
		if !live || e.token != mk.token {
			return
		}
		undone = true
		freed = m.dropHold(key, holdsKey, e, now) == 0
	})
	if freed {
		m.releases.notify(key) // outside the node's lock, as the other releases
	}
	return undone, err
}

// dropHold takes one hold of e (key's live entry) and deletes the lock
// when none is left. It returns the holds left; the caller holds m.mu.
func (m *Memory) dropHold(key, holdsKey string, e entry, now time.Time) int64 {
	n := m.holdsOf(holdsKey, e.token, now) - 1
	if n <= 0 {
		delete(m.keys, key)
		delete(m.keys, holdsKey)
		return 0
	}
	m.store(holdsKey, quorum.FormatHolds(e.token, n), e.expires)
	return n
}

// Unhold implements quorum.Reentrant.
func (m *Memory) Unhold(ctx context.Context, key, holdsKey, token string) (remaining int64, ok bool, err error) {
	err = m.do(ctx, "Unhold", func(now time.Time) {
		e, live := m.lookup(key, now)
		if !live || e.token != token {
			return
		}
		ok = true
		remaining = m.dropHold(key, holdsKey, e, now)
	})
	if err == nil && ok && remaining == 0 {
		m.releases.notify(key) // outside the node's lock, as the other releases
	}
	return remaining, ok, err
}

// ExtendHeld implements quorum.Reentrant.
func (m *Memory) ExtendHeld(ctx context.Context, key, holdsKey, token string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var extended bool
	err := m.do(ctx, "ExtendHeld", func(now time.Time) {
		e, live := m.lookup(key, now)
		if !live || e.token != token {
			return
		}
		extended = true
		// Never shorter: another hold may have been granted more.
		m.store(key, token, later(e.expires, now.Add(ttl)))
		if h, ok := m.lookup(holdsKey, now); ok {
			m.store(holdsKey, h.token, later(h.expires, now.Add(ttl)))
		}
	})
	return extended, err
}

// holdsOf reads token's hold count; none, or one of another token, is 1.
// The caller holds m.mu.
func (m *Memory) holdsOf(holdsKey, token string, now time.Time) int64 {
	if h, ok := m.lookup(holdsKey, now); ok {
		if tok, n, ok := quorum.ParseHolds(h.token); ok && tok == token {
			return n
		}
	}
	return 1
}

// ReadFence implements quorum.Fencer.
func (m *Memory) ReadFence(ctx context.Context, key string) (int64, error) {
	var v int64
	var bad error
	err := m.do(ctx, "ReadFence", func(now time.Time) {
		if e, ok := m.lookup(key, now); ok {
			v, bad = parseFence(e.token)
		}
	})
	if err == nil {
		err = bad
	}
	return v, err
}

// RaiseFence implements quorum.Fencer.
func (m *Memory) RaiseFence(ctx context.Context, key string, v int64, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, ErrInvalidTTL
	}
	var cur int64
	err := m.do(ctx, "RaiseFence", func(now time.Time) {
		if e, ok := m.lookup(key, now); ok {
			cur, _ = parseFence(e.token) // malformed: overwritten, as on Redis
		}
		cur = max(cur, v)
		m.store(key, strconv.FormatInt(cur, 10), now.Add(ttl))
	})
	return cur, err
}

// RestoreHeld implements quorum.HeldRestorer.
func (m *Memory) RestoreHeld(ctx context.Context, key, holdsKey, token string, holds int64, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var stored bool
	err := m.do(ctx, "RestoreHeld", func(now time.Time) {
		if _, live := m.lookup(key, now); live {
			return
		}
		stored = true
		m.store(key, token, now.Add(ttl))
		m.store(holdsKey, quorum.FormatHolds(token, holds), now.Add(ttl))
	})
	return stored, err
}
