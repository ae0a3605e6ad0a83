package backend

import (
	"context"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// The in-memory node provides the quorum's optional operations.
var (
	_ quorum.MultiNode = (*Memory)(nil)
	_ quorum.TTLAdder  = (*Memory)(nil)
)

// SetNXAll implements quorum.MultiNode.
func (m *Memory) SetNXAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var stored bool
	err := m.do(ctx, "SetNXAll", func(now time.Time) {
		for _, k := range keys {
			if _, held := m.lookup(k, now); held {
				return
			}
		}
		for _, k := range keys {
			m.store(k, token, now.Add(ttl))
		}
		stored = true
	})
	return stored, err
}

// ExtendAll implements quorum.MultiNode.
func (m *Memory) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var extended bool
	err := m.do(ctx, "ExtendAll", func(now time.Time) {
		for _, k := range keys {
			if e, held := m.lookup(k, now); !held || e.token != token {
				return
			}
		}
		for _, k := range keys {
			m.store(k, token, now.Add(ttl))
		}
		extended = true
	})
	return extended, err
}

// ReleaseEach implements quorum.MultiNode.
func (m *Memory) ReleaseEach(ctx context.Context, keys []string, token string) ([]bool, error) {
	out := make([]bool, len(keys))
	err := m.do(ctx, "ReleaseEach", func(now time.Time) {
		for i, k := range keys {
			if e, held := m.lookup(k, now); held && e.token == token {
				delete(m.keys, k)
				out[i] = true
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if out[i] {
			m.releases.notify(k)
		}
	}
	return out, nil
}

// CompareAndAddTTL implements quorum.TTLAdder.
func (m *Memory) CompareAndAddTTL(ctx context.Context, key, token string, add, limit time.Duration) (time.Duration, bool, error) {
	if add <= 0 || limit <= 0 {
		return 0, false, ErrInvalidTTL
	}
	var ttl time.Duration
	var ok bool
	err := m.do(ctx, "CompareAndAddTTL", func(now time.Time) {
		e, held := m.lookup(key, now)
		if !held || e.token != token {
			return
		}
		ttl = min(e.expires.Sub(now)+add, limit)
		m.store(key, token, now.Add(ttl))
		ok = true
	})
	return ttl, ok, err
}
