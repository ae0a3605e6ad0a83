package embedded

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
)

// errMemLate is the reply to a command given after its deadline.
var errMemLate = fmt.Errorf("backend: no reply by the deadline: %w", context.DeadlineExceeded)

var _ quorum.Node = (*Memory)(nil)

// Memory is an in-process node: a map of key to token and expiry, that
// runs every quorum.Cmd as one step under its lock. Expired keys behave as
// absent; they are dropped when touched and by a sweep that runs every so
// many writes, so no goroutine is needed for them (a client's script runs
// on one of the node's, see memLine). Each kind runs as on a Redis
// node, its command or script (backend.Build) run by the node's Lua engine over
// the same keys, which may also hold hashes and sorted sets; replicated
// client scripts (Eval) run on that engine too.
type Memory struct {
	name string

	mu     sync.Mutex
	keys   map[string]entry
	writes int // writes since the last sweep
	closed bool
	now    func() time.Time // time.Now; tests replace it
	// expired are the keys (as clients name them) that expired since the
	// last report, while changes are watched (see expire).
	expired []string

	scripts memScripts // hashes and undo records, under mu
	// deadline is the one given to Do for the command running under mu
	// (zero: none); it bounds a script. It lives here rather than in each
	// command so that the native commands carry nothing more.
	deadline time.Time

	releases watchers[func(db int, key string)]
	pubsub   memPubSub
	tracking memTracking

	// line runs the client's scripts, and whatever is given after one
	// until it has run, off the caller's goroutine, in order.
	line memLine
	// rand is the scripts' math.random; guarded by mu.
	rand rand48
}

type entry struct {
	token string
	// expires carries time.Now's monotonic reading, so a wall-clock jump
	// neither frees nor prolongs a lock.
	expires time.Time
}

// New returns an empty in-memory node called name.
func New(name string) *Memory {
	return &Memory{
		name: name,
		keys: make(map[string]entry),
		now:  time.Now,
	}
}

// Name returns the name given to New.
func (m *Memory) Name() string { return m.name }

// Do implements quorum.Node. A native command answers before Do returns,
// unless it must wait its turn behind a client's script; a client's
// script (quorum.Eval) runs on a goroutine of the node's, so that a long
// one holds up neither the caller nor the other nodes of its round (see
// memLine). Either way the node runs the commands given to it in the
// order Do was called. A command given at or past its deadline fails
// without running. A zero deadline is none.
func (m *Memory) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		r.Receive(quorum.Reply{Err: errMemLate})
		return
	}
	if runsApart(cmd.Kind) || m.line.busy.Load() {
		m.enqueue(deadline, cmd, r)
		return
	}
	r.Receive(m.run(deadline, cmd))
}

// Watch implements quorum.Node: w.Released hears of the releases of
// marked keys, with their database, and w.Message of the messages
// published on the node. A Memory node has no server to identify.
func (m *Memory) Watch(w quorum.Watcher) bool {
	if w.Released != nil {
		m.releases.add(w.Released)
	}
	if w.Message != nil {
		m.pubsub.message.add(w.Message)
	}
	if w.Invalidated != nil {
		m.watchInvalidated(w.Invalidated)
	}
	return false
}

// Close drops every key; later operations fail with backend.ErrClosed,
// and so do those still in the node's line. Safe to call twice.
func (m *Memory) Close() error {
	m.stopTracking()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.keys = make(map[string]entry)
	m.scripts = memScripts{}
	return nil
}

// run executes c under the lock and announces what it released once the
// lock is let go, so that a watcher may call back into the node. now is
// read inside the lock so that expiry decisions are ordered with the
// writes they race against.
func (m *Memory) run(deadline time.Time, c quorum.Cmd) quorum.Reply {
	if err := checkCmd(&c); err != nil {
		return quorum.Reply{Err: err}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return quorum.Reply{Err: backend.ErrClosed}
	}
	m.deadline = deadline
	s := memOp{m: m, c: c, now: m.now()}
	before := m.snapshot(c)
	rep := s.exec()
	changed := m.changed(c, before)
	for _, k := range m.takeExpired() {
		// A key the command names and found expired is among changed.
		if !slices.Contains(changed, k) {
			changed = append(changed, k)
		}
	}
	m.mu.Unlock()
	m.tracking.report(changed)
	for _, r := range s.announce {
		for _, fn := range m.releases.list() {
			fn(r.db, r.key)
		}
	}
	m.pubsub.deliver(s.published)
	return rep
}

// lookup returns key's live value, a string (h nil) or a hash a script
// wrote, dropping it if it has expired: the one reading of a key for the
// native steps, the scripts' commands and their undo. A hash's entry is
// its expiry with an empty token, so that SET NX and the other claims
// find the key taken, as on Redis. The caller holds m.mu.
func (m *Memory) lookup(key string, now time.Time) (e entry, h *memHash, ok bool) {
	if e, ok := m.keys[key]; ok {
		if now.Before(e.expires) {
			return e, nil, true
		}
		m.expire(key)
		return entry{}, nil, false
	}
	if h := m.scripts.hashes[key]; h != nil {
		if now.Before(h.expires) {
			return entry{expires: h.expires}, h, true
		}
		m.expire(key)
	}
	return entry{}, nil, false
}

// expire drops node key nk (a string or a hash), which has expired, and
// keeps it for the watchers of changed keys: a Redis server reports an
// expiry whether a read, a write or its active expiry came upon it, and
// so does this node (run and the expiry loop report what expire kept).
// The caller holds m.mu.
func (m *Memory) expire(nk string) {
	delete(m.keys, nk)
	delete(m.scripts.hashes, nk)
	if m.tracking.on.Load() {
		_, key := memSplit(nk)
		m.expired = append(m.expired, key)
	}
}

// takeExpired returns the keys expire kept and forgets them. The caller
// holds m.mu.
func (m *Memory) takeExpired() []string {
	out := m.expired
	m.expired = nil
	return out
}

// store writes an entry and sweeps expired keys once enough writes have
// accumulated. Sweeping after len/2 writes keeps the cost amortised O(1)
// per write while bounding the map to about twice the live keys plus the
// keys written since the last sweep. The caller holds m.mu.
func (m *Memory) store(key, token string, expires time.Time) {
	m.keys[key] = entry{token: token, expires: expires}
	m.dropHash(key)
	m.wrote()
}

// wrote counts a write and sweeps once enough have accumulated.
func (m *Memory) wrote() {
	m.writes++
	if m.writes < 64+(len(m.keys)+len(m.scripts.hashes)+len(m.scripts.records))/2 {
		return
	}
	m.writes = 0
	m.sweep(m.now())
}

// sweep drops every expired key, string or hash, and the expired undo
// records. The caller holds m.mu.
func (m *Memory) sweep(now time.Time) {
	for k, e := range m.keys {
		if !now.Before(e.expires) {
			m.expire(k)
		}
	}
	m.sweepScripts(now)
}
