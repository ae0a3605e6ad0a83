package tracking

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// ReservedPrefix starts the proxy's own keys: their changes are never
// reported to a client.
const ReservedPrefix = "redlockd:"

// Client is one connection with tracking on. Invalidate tells it that
// keys may have changed (nil: anything may have); it must not block nor
// call the Table.
type Client interface{ Invalidate(keys []string) }

// StartWait bounds how long Ready waits for the nodes' reports to begin.
// A node that is down meanwhile reports nil when its reports begin later,
// which reaches every client then tracking.
const StartWait = 2 * time.Second

// DefaultMaxKeys is how many keys a Table tracks at most, as Redis's
// tracking-table-max-keys (whose default is the same).
const DefaultMaxKeys = 1000000

// Table is the proxy's tracking state. It is safe for concurrent use.
type Table struct {
	// MaxKeys bounds the keys tracked: past it, tracked keys are
	// invalidated (their clients told, then the keys forgotten) to make
	// room, as Redis evicts from its tracking table. Set before use;
	// New sets DefaultMaxKeys.
	MaxKeys int

	nodes []quorum.Node
	// watch asks the nodes for their reports, once, when the first client
	// tracks something: until then the backends report nothing. ready is
	// closed once every node's reports have begun (its first nil), or
	// StartWait after the ask (see Ready).
	watch sync.Once
	ready chan struct{}

	mu sync.Mutex
	// byKey: the clients that read a key, each with its reads in flight.
	byKey map[string]map[Client]int
	// keysOf: the keys each client tracks, to forget them all at once.
	keysOf map[Client]map[string]struct{}
	// bcast: the clients in broadcasting mode, with their prefixes (none:
	// every key).
	bcast map[Client][]string
}

// New returns a Table fed by every node of c, from the first Begin or
// Broadcast on. A node that starts reporting reports nil first (its
// reports were off until then), so a client that tracked keys before
// hears of them too.
func New(c *quorum.Cluster) *Table {
	return &Table{
		MaxKeys: DefaultMaxKeys,
		nodes:   c.Nodes(),
		byKey:   make(map[string]map[Client]int),
		keysOf:  make(map[Client]map[string]struct{}),
		bcast:   make(map[Client][]string),
	}
}

// Ready asks the nodes for their reports if nobody did yet, and waits
// until they have begun (at most StartWait). A client that tracks keys
// only after it returns is not told of the nodes' first reports, which
// only say that changes were not heard until then: WATCH needs that, as
// a spare invalidation would abort its EXEC. A cached read does not wait:
// a spare invalidation costs it one read again.
func (t *Table) Ready() {
	t.start()
	<-t.ready
}

// start asks the nodes for their reports, the first time.
func (t *Table) start() {
	t.watch.Do(func() {
		t.ready = make(chan struct{})
		closeReady := sync.OnceFunc(func() { close(t.ready) })
		if len(t.nodes) == 0 {
			closeReady()
			return
		}
		var left atomic.Int32 // nodes whose reports have not begun
		left.Store(int32(len(t.nodes)))
		timer := time.AfterFunc(StartWait, closeReady)
		for _, n := range t.nodes {
			var begun sync.Once
			n.Watch(quorum.Watcher{Invalidated: func(keys []string) {
				t.Invalidated(keys)
				if keys == nil {
					begun.Do(func() {
						if left.Add(-1) == 0 {
							timer.Stop()
							closeReady()
						}
					})
				}
			}})
		}
	})
}

// Begin tracks keys for c before a read of them starts: a change reported
// from now on reaches c. Every Begin is followed by an End with the same
// keys once the read has its answer.
func (t *Table) Begin(c Client, keys []string) {
	t.start()
	t.mu.Lock()
	t.beginLocked(c, keys)
	evicted := t.evictLocked()
	t.mu.Unlock()
	for c, ks := range evicted {
		c.Invalidate(ks)
	}
}

// evictLocked forgets tracked keys past MaxKeys (never one with a read in
// flight) and returns whom to tell.
func (t *Table) evictLocked() map[Client][]string {
	if len(t.byKey) <= t.MaxKeys {
		return nil
	}
	var victims []string
	for k, readers := range t.byKey {
		if len(t.byKey)-len(victims) <= t.MaxKeys {
			break
		}
		idle := true
		for _, n := range readers {
			idle = idle && n == 0
		}
		if idle {
			victims = append(victims, k)
		}
	}
	told := make(map[Client][]string)
	for _, k := range victims {
		for c := range t.byKey[k] {
			told[c] = append(told[c], k)
			t.drop(k, c)
			delete(t.keysOf[c], k)
		}
	}
	return told
}

func (t *Table) beginLocked(c Client, keys []string) {
	mine := t.keysOf[c]
	if mine == nil {
		mine = make(map[string]struct{})
		t.keysOf[c] = mine
	}
	for _, k := range keys {
		if strings.HasPrefix(k, ReservedPrefix) {
			continue
		}
		readers := t.byKey[k]
		if readers == nil {
			readers = make(map[Client]int)
			t.byKey[k] = readers
		}
		readers[c]++
		mine[k] = struct{}{}
	}
}

// Keys is how many keys are tracked.
func (t *Table) Keys() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// End ends a read that Begin started: the keys stay tracked until a
// change of them is reported.
func (t *Table) End(c Client, keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if readers := t.byKey[k]; readers != nil {
			if n, ok := readers[c]; ok && n > 0 {
				readers[c] = n - 1
			}
		}
	}
}

// Broadcast puts c in broadcasting mode: it hears of every change of a
// key that starts with one of prefixes (of every key without prefixes),
// whether or not it read it.
func (t *Table) Broadcast(c Client, prefixes []string) {
	t.start()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bcast[c] = append([]string{}, prefixes...)
}

// Forget drops everything c tracks (tracking turned off, connection
// closed).
func (t *Table) Forget(c Client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bcast, c)
	for k := range t.keysOf[c] {
		t.drop(k, c)
	}
	delete(t.keysOf, c)
}

// Tracks reports whether c tracks key (for tests and INFO).
func (t *Table) Tracks(c Client, key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byKey[key][c]
	return ok
}

func (t *Table) drop(k string, c Client) {
	readers := t.byKey[k]
	delete(readers, c)
	if len(readers) == 0 {
		delete(t.byKey, k)
	}
}

// Invalidated takes a node's report of changed keys (nil: anything may
// have changed) and tells the clients concerned. It is the quorum.Watcher
// of every node.
func (t *Table) Invalidated(keys []string) {
	var told map[Client][]string
	var flushed []Client
	t.mu.Lock()
	if keys == nil {
		flushed = t.flushLocked()
	} else {
		told = t.reportLocked(keys)
	}
	t.mu.Unlock()
	// Told outside the lock: a Client may be slow to queue, never to
	// call back.
	for _, c := range flushed {
		c.Invalidate(nil)
	}
	for c, ks := range told {
		c.Invalidate(ks)
	}
}

// flushLocked forgets what every client tracks (but for the reads in
// flight) and returns every client.
func (t *Table) flushLocked() []Client {
	seen := make(map[Client]struct{})
	for c := range t.bcast {
		seen[c] = struct{}{}
	}
	for c, mine := range t.keysOf {
		seen[c] = struct{}{}
		for k := range mine {
			if t.byKey[k][c] == 0 {
				t.drop(k, c)
				delete(mine, k)
			}
		}
	}
	out := make([]Client, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	return out
}

// reportLocked finds the clients of keys, forgetting the keys they no
// longer read.
func (t *Table) reportLocked(keys []string) map[Client][]string {
	told := make(map[Client][]string)
	for _, k := range keys {
		if strings.HasPrefix(k, ReservedPrefix) {
			continue
		}
		for c, inFlight := range t.byKey[k] {
			told[c] = append(told[c], k)
			if inFlight == 0 {
				t.drop(k, c)
				delete(t.keysOf[c], k)
			}
		}
		for c, prefixes := range t.bcast {
			if hasPrefix(k, prefixes) {
				told[c] = append(told[c], k)
			}
		}
	}
	return told
}

func hasPrefix(k string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
