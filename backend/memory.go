package backend

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	// ErrClosed is returned by a node's operations after Close (for a Redis
	// node, by the quorum.Node methods, which run over its multiplexer).
	ErrClosed = errors.New("backend: node closed")
	// ErrInvalidTTL is returned for a ttl <= 0. The quorum never sends one,
	// and Redis would treat PEXPIRE with it as a delete, so it is refused
	// rather than passed on.
	ErrInvalidTTL = errors.New("backend: ttl must be positive")
)

// Memory is an in-process quorum.Node: a map of key to token and expiry.
// Expired keys behave as absent; they are dropped when touched and by a
// sweep that runs every so many writes, so no goroutine is needed.
//
// SetFault, SetDelay and Calls are hooks for the quorum's unit tests.
type Memory struct {
	name string

	mu     sync.Mutex
	keys   map[string]entry
	writes int // writes since the last sweep
	closed bool
	fault  error
	delay  time.Duration
	calls  map[string]int
	now    func() time.Time // time.Now; tests replace it

	releases releaseWatchers
}

type entry struct {
	token string
	// expires carries time.Now's monotonic reading, so a wall-clock jump
	// neither frees nor prolongs a lock.
	expires time.Time
}

// NewMemory returns an empty in-memory node called name.
func NewMemory(name string) *Memory {
	return &Memory{
		name:  name,
		keys:  make(map[string]entry),
		calls: make(map[string]int),
		now:   time.Now,
	}
}

// Name returns the name given to NewMemory.
func (m *Memory) Name() string { return m.name }

// SetFault makes every following operation fail with err (after any delay
// set by SetDelay); nil restores normal service.
func (m *Memory) SetFault(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fault = err
}

// SetDelay makes every following operation wait d, or until its ctx is
// done, before it runs; 0 removes the delay.
func (m *Memory) SetDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delay = d
}

// Calls reports how many times op (a method name such as "SetNX" or
// "CompareAndDelete") was called, counting calls that failed.
func (m *Memory) Calls(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[op]
}

// SetNX implements quorum.Node.
func (m *Memory) SetNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var stored bool
	err := m.do(ctx, "SetNX", func(now time.Time) {
		if _, held := m.lookup(key, now); !held {
			m.store(key, token, now.Add(ttl))
			stored = true
		}
	})
	return stored, err
}

// Set implements quorum.Node.
func (m *Memory) Set(ctx context.Context, key, token string, ttl time.Duration) error {
	if ttl <= 0 {
		return ErrInvalidTTL
	}
	return m.do(ctx, "Set", func(now time.Time) {
		m.store(key, token, now.Add(ttl))
	})
}

// CompareAndDelete implements quorum.Node.
func (m *Memory) CompareAndDelete(ctx context.Context, key, token string) (bool, error) {
	var deleted bool
	err := m.do(ctx, "CompareAndDelete", func(now time.Time) {
		if e, ok := m.lookup(key, now); ok && e.token == token {
			delete(m.keys, key)
			deleted = true
		}
	})
	return deleted, err
}

// CompareAndExtend implements quorum.Node.
func (m *Memory) CompareAndExtend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var extended bool
	err := m.do(ctx, "CompareAndExtend", func(now time.Time) {
		if e, ok := m.lookup(key, now); ok && e.token == token {
			m.store(key, token, now.Add(ttl))
			extended = true
		}
	})
	return extended, err
}

// Get implements quorum.Node. The pttl of a present key is always > 0:
// a Memory node never stores a key without an expiry.
func (m *Memory) Get(ctx context.Context, key string) (token string, pttl time.Duration, ok bool, err error) {
	err = m.do(ctx, "Get", func(now time.Time) {
		var e entry
		if e, ok = m.lookup(key, now); ok {
			token, pttl = e.token, e.expires.Sub(now)
		}
	})
	return token, pttl, ok, err
}

// Delete implements quorum.Node.
func (m *Memory) Delete(ctx context.Context, key string) (bool, error) {
	var existed bool
	err := m.do(ctx, "Delete", func(now time.Time) {
		_, existed = m.lookup(key, now)
		delete(m.keys, key)
	})
	return existed, err
}

// Expire implements quorum.Node.
func (m *Memory) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	var existed bool
	err := m.do(ctx, "Expire", func(now time.Time) {
		var e entry
		if e, existed = m.lookup(key, now); existed {
			m.store(key, e.token, now.Add(ttl))
		}
	})
	return existed, err
}

// Close drops every key; later operations return ErrClosed. Safe to call
// twice.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.keys = make(map[string]entry)
	return nil
}

// do runs fn under the lock once the call has passed its ctx, delay and
// fault checks. now is read inside the lock so that expiry decisions are
// ordered with the writes they race against.
func (m *Memory) do(ctx context.Context, op string, fn func(now time.Time)) error {
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	fn(m.now())
	return nil
}

// begin counts the call and applies the test hooks. The delay is waited
// outside the lock so a slow call never blocks the node's other callers.
func (m *Memory) begin(ctx context.Context, op string) error {
	m.mu.Lock()
	m.calls[op]++
	delay, fault, closed := m.delay, m.fault, m.closed
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if closed {
		return ErrClosed
	}
	if delay > 0 {
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
	return fault
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lookup returns key's live entry, dropping it if it has expired.
// The caller holds m.mu.
func (m *Memory) lookup(key string, now time.Time) (entry, bool) {
	e, ok := m.keys[key]
	if ok && !now.Before(e.expires) {
		delete(m.keys, key)
		return entry{}, false
	}
	return e, ok
}

// store writes an entry and sweeps expired keys once enough writes have
// accumulated. Sweeping after len/2 writes keeps the cost amortised O(1)
// per write while bounding the map to about twice the live keys plus the
// keys written since the last sweep. The caller holds m.mu.
func (m *Memory) store(key, token string, expires time.Time) {
	m.keys[key] = entry{token: token, expires: expires}
	m.writes++
	if m.writes < 64+len(m.keys)/2 {
		return
	}
	m.writes = 0
	now := m.now()
	for k, e := range m.keys {
		if !now.Before(e.expires) {
			delete(m.keys, k)
		}
	}
}
