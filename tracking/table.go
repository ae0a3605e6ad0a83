package tracking

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

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
	// timeout bounds a look at one node (see Own).
	timeout time.Duration
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
	// own: for connections with NOLOOP, what their last own write of a
	// key left on the nodes (see Own).
	own map[Client]map[string]ownWrite
}

// ownWrite is what a connection's own write of a key leaves on a node: one
// of values under the key, or, with absent, no key. left has bit i set
// once a report of node i has been left out as the write's own: a write
// is reported once by each node it changes, so any later report of node
// i is another change (see Own).
type ownWrite struct {
	db     int
	values []string
	absent bool
	left   uint64
}

// leaves reports whether a report of node i may still be the write's own,
// and notes that it is; a node past the 64th is told every report.
func (w *ownWrite) leaves(i int) bool {
	if i >= 64 || w.left&(1<<i) != 0 {
		return false
	}
	w.left |= 1 << i
	return true
}

// MaxOwn bounds the writes remembered per connection (see Own); past it,
// one is forgotten, and a report of that key is told again.
const MaxOwn = 1024

// New returns a Table fed by every node of c, from the first Begin or
// Broadcast on. A node that starts reporting reports nil first (its
// reports were off until then), so a client that tracked keys before
// hears of them too.
func New(c *quorum.Cluster) *Table {
	return &Table{
		MaxKeys: DefaultMaxKeys,
		nodes:   c.Nodes(),
		timeout: c.Config().NodeTimeout,
		byKey:   make(map[string]map[Client]int),
		keysOf:  make(map[Client]map[string]struct{}),
		bcast:   make(map[Client][]string),
		own:     make(map[Client]map[string]ownWrite),
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
		for i, n := range t.nodes {
			var begun sync.Once
			n.Watch(quorum.Watcher{Invalidated: func(keys []string) {
				t.invalidated(i, keys)
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
		if strings.HasPrefix(k, quorum.ReservedPrefix) {
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
	delete(t.own, c)
	for k := range t.keysOf[c] {
		t.drop(k, c)
	}
	delete(t.keysOf, c)
}

// Own tells t that c, a connection with NOLOOP, is about to write keys in
// database db, and what that write leaves on a node where it changes a
// key: one of values under the key, or, with absent, no key. Until c
// writes the key again, a node's report of it is told to c only if that
// node, looked at in db once the report has arrived, holds something
// else there: a change that the node shows as c's own (or one that c's
// own write then overwrote) is left out, as Redis leaves out a NOLOOP
// connection's own changes. What another client changed after c's write
// shows on the node, so it is still told; a look that fails tells too.
//
// A node's report does not name the database of the change, and Redis's
// tracking ignores it: another client's write of the key in another
// database is told, though db still shows c's write. So each node has
// one report left out at most per own write, the one own report it makes:
// any other report of that node is told, whatever the look shows. Two own
// writes of a key whose reports both arrive after the second may so cost
// c a spare invalidation, never a missed one. (A Redis node reports the
// changes of one event-loop turn together: another client's change made
// in the same turn as c's own is left out with it.)
func (t *Table) Own(c Client, db int, keys []string, values []string, absent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.own[c]
	if mine == nil {
		mine = make(map[string]ownWrite)
		t.own[c] = mine
	}
	w := ownWrite{db: db, values: values, absent: absent}
	for _, k := range keys {
		if strings.HasPrefix(k, quorum.ReservedPrefix) {
			continue
		}
		if _, ok := mine[k]; !ok && len(mine) >= MaxOwn {
			for old := range mine {
				delete(mine, old)
				break
			}
		}
		mine[k] = w
	}
}

// Tracks reports whether c tracks key (for tests and INFO).
func (t *Table) Tracks(c Client, key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byKey[key][c]
	return ok
}

// drop forgets that c tracks k, on both sides.
func (t *Table) drop(k string, c Client) {
	delete(t.keysOf[c], k)
	readers := t.byKey[k]
	delete(readers, c)
	if len(readers) == 0 {
		delete(t.byKey, k)
	}
	// Once c is told of k (or forgets it), an earlier own write of k
	// can only be reported to it as a spare.
	delete(t.own[c], k)
}

// Invalidated takes a report of changed keys (nil: anything may have
// changed) from a node it cannot name, and tells the clients concerned;
// with no node to look at, a NOLOOP client's own writes are told too
// (see Own).
func (t *Table) Invalidated(keys []string) { t.invalidated(-1, keys) }

// invalidated takes node i's report of changed keys (i < 0: a node not
// named) and tells the clients concerned; a report of a key that a NOLOOP
// client wrote itself is told to it only after a look at node i (see
// Own).
func (t *Table) invalidated(i int, keys []string) {
	var told map[Client][]string
	var flushed []Client
	var looks map[look][]Client
	t.mu.Lock()
	if keys == nil {
		flushed = t.flushLocked()
	} else {
		told, looks = t.reportLocked(i, keys)
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
	for l, cs := range looks {
		t.lookThenTell(i, l, cs)
	}
}

// look is one key to read on a node before its report is told to the
// NOLOOP clients that wrote it.
type look struct {
	key string
	db  int
}

// lookThenTell reads l on node i, and tells each client of cs whose own
// write the node does not show, if the report still concerns it.
func (t *Table) lookThenTell(i int, l look, cs []Client) {
	deadline := time.Now().Add(t.timeout)
	t.nodes[i].Do(deadline, quorum.Cmd{Kind: quorum.Get, Key: l.key, DB: l.db}, quorum.ReceiverFunc(func(rep quorum.Reply) {
		var tell []Client
		t.mu.Lock()
		for _, c := range cs {
			if w, ok := t.own[c][l.key]; ok && w.db == l.db && w.shows(rep) && w.leaves(i) {
				t.own[c][l.key] = w
				continue
			}
			if t.concernsLocked(c, l.key) {
				tell = append(tell, c)
			}
		}
		t.mu.Unlock()
		for _, c := range tell {
			c.Invalidate([]string{l.key})
		}
	}))
}

// Disown ends what Own said of keys for c, which reads them again: from
// then on every report of them is told to it, as Redis tells a change
// after a read (a report of the own write still on its way is a spare).
func (t *Table) Disown(c Client, keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.own[c]
	for _, k := range keys {
		delete(mine, k)
	}
	if len(mine) == 0 {
		delete(t.own, c)
	}
}

// shows reports whether a node's reply to a read of the key shows what
// the own write left.
func (w ownWrite) shows(rep quorum.Reply) bool {
	switch {
	case rep.Err != nil:
		return false
	case !rep.OK:
		return w.absent
	}
	return slices.Contains(w.values, rep.Token)
}

// concernsLocked reports whether a report of k is still c's to hear, and
// forgets k for c as reportLocked does when c is told.
func (t *Table) concernsLocked(c Client, k string) bool {
	if prefixes, ok := t.bcast[c]; ok {
		return hasPrefix(k, prefixes)
	}
	inFlight, ok := t.byKey[k][c]
	if ok {
		t.toldLocked(k, c, inFlight)
	}
	return ok
}

// toldLocked forgets k for c, which is being told of it, unless a read of
// it is in flight (another node's answer to it may predate the change).
func (t *Table) toldLocked(k string, c Client, inFlight int) {
	if inFlight == 0 {
		t.drop(k, c)
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
			t.toldLocked(k, c, t.byKey[k][c])
		}
	}
	out := make([]Client, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	return out
}

// reportLocked finds the clients of keys, forgetting the keys they no
// longer read. A client whose own write of a key node i may be reporting
// (i >= 0) is left for a look at the node instead.
func (t *Table) reportLocked(i int, keys []string) (map[Client][]string, map[look][]Client) {
	told := make(map[Client][]string)
	var looks map[look][]Client
	later := func(c Client, k string) bool {
		w, ok := t.own[c][k]
		if !ok || i < 0 {
			return false
		}
		if looks == nil {
			looks = make(map[look][]Client)
		}
		l := look{k, w.db}
		looks[l] = append(looks[l], c)
		return true
	}
	for _, k := range keys {
		if strings.HasPrefix(k, quorum.ReservedPrefix) {
			continue
		}
		for c, inFlight := range t.byKey[k] {
			if later(c, k) {
				continue
			}
			told[c] = append(told[c], k)
			t.toldLocked(k, c, inFlight)
		}
		for c, prefixes := range t.bcast {
			if hasPrefix(k, prefixes) && !later(c, k) {
				told[c] = append(told[c], k)
			}
		}
	}
	return told, looks
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
