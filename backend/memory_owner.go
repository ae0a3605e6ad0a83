package backend

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// The reentrant-lock and fencing extensions of the in-memory node
// (quorum.Reentrant, quorum.Fencer). Hold counts and fence counters are
// entries like any other, stored as text the way a Redis node stores them.

// Reenter implements quorum.Reentrant.
func (m *Memory) Reenter(ctx context.Context, key, holdsKey, prefix string, ttl time.Duration) (token string, holds int64, ok bool, err error) {
	if ttl <= 0 {
		return "", 0, false, ErrInvalidTTL
	}
	err = m.do(ctx, "Reenter", func(now time.Time) {
		e, live := m.lookup(key, now)
		if !live || !strings.HasPrefix(e.token, prefix) {
			return
		}
		token, ok = e.token, true
		holds = m.holdsOf(holdsKey, token, now) + 1
		m.store(key, token, now.Add(ttl))
		m.store(holdsKey, formatHolds(token, holds), now.Add(ttl))
	})
	return token, holds, ok, err
}

// Unhold implements quorum.Reentrant.
func (m *Memory) Unhold(ctx context.Context, key, holdsKey, token string) (remaining int64, ok bool, err error) {
	err = m.do(ctx, "Unhold", func(now time.Time) {
		e, live := m.lookup(key, now)
		if !live || e.token != token {
			return
		}
		ok = true
		remaining = m.holdsOf(holdsKey, token, now) - 1
		if remaining <= 0 {
			remaining = 0
			delete(m.keys, key)
			delete(m.keys, holdsKey)
			return
		}
		m.store(holdsKey, formatHolds(token, remaining), e.expires)
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
		m.store(key, token, now.Add(ttl))
		if h, ok := m.lookup(holdsKey, now); ok {
			m.store(holdsKey, h.token, now.Add(ttl))
		}
	})
	return extended, err
}

// holdsOf reads token's hold count; none, or one of another token, is 1.
// The caller holds m.mu.
func (m *Memory) holdsOf(holdsKey, token string, now time.Time) int64 {
	if h, ok := m.lookup(holdsKey, now); ok {
		if tok, n, ok := parseHolds(h.token); ok && tok == token {
			return n
		}
	}
	return 1
}

// formatHolds and parseHolds are the "<token> <count>" text of a hold
// count, as the Redis node's scripts write it.
func formatHolds(token string, n int64) string { return token + " " + strconv.FormatInt(n, 10) }

func parseHolds(s string) (string, int64, bool) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	return s[:i], n, err == nil
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
		m.store(holdsKey, formatHolds(token, holds), now.Add(ttl))
	})
	return stored, err
}
