package quorum

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Releases that did not reach a node are sent again once it answers.
//
// A compare-and-delete that timed out or lost its connection (a stalled
// server, a reset mid-reply, a node that is down) leaves the token on that
// node until its ttl ends; so does a SET that timed out in a failed
// acquire and lands after the release behind it (a resumed SIGSTOPped
// server runs what sat in its socket). Such a copy is a minority and cannot
// grant the lock to anyone, but it makes that node vote "no" for the key
// and so costs the key its fault tolerance until the ttl ends.
//
// The Cluster remembers each such (database, key, token) per node and
// retries the compare-and-delete every Config.ReleaseRetry until the node
// answers. The record is bounded: at most maxPendingPerNode entries per
// node (the oldest are dropped first), and an entry is dropped once its
// ttl has passed, since the key has expired on the node by then. Only tokens whose lock was
// released or never granted are recorded.
//
// A token can come back: a blocking acquire keeps its token from round to
// round, and a client retrying SET NX keeps its own value. A queued
// compare-and-delete of key=token is the undo of an earlier round, never
// of a later one: a round that asks a node to store key=token supersedes
// the node's queued compare-and-deletes of it (supersede), before that
// round's command leaves. A retry is handed to its node under the queue's
// lock, so it either left before the later round's command, on the same
// connection of the key (and lands before it), or does not leave at all.
//
// A retry that finds the token absent is not the end: a SET that timed out
// may still be on its way (for example on a connection the client already
// gave up on), so the entry is checked once more a retry interval later.

// maxPendingPerNode bounds the releases remembered for one node.
const maxPendingPerNode = 10000

type pendingRelease struct {
	db         int
	key, token string
	// until is when the key expires on the node at the latest.
	until time.Time
	// confirmAt is zero until a retry found the token absent; from then on
	// the next retry after confirmAt that finds it absent too ends the entry.
	confirmAt time.Time
	// undo, when set, makes the entry an UndoHold of a round of LockOwner
	// (token is then its mark key) instead of a compare-and-delete. It is
	// exact and leaves a mark against a late arrival, so one answer ends it.
	undo *undoHold
	// eval, when set, makes the entry an UndoEval of a replicated script's
	// round (token is then its mark key). Like an UndoHold it is exact.
	eval *undoEval
}

// pendingKey names the compare-and-deletes of one key=token in one
// database.
type pendingKey struct {
	db         int
	key, token string
}

// cad reports whether e is a plain compare-and-delete (not an exact undo
// of a marked round), and names it.
func (e *pendingRelease) cad() (pendingKey, bool) {
	return pendingKey{e.db, e.key, e.token}, e.undo == nil && e.eval == nil
}

// undoEval is what UndoEval needs besides the mark.
type undoEval struct {
	keys []string
	ttl  time.Duration
}

// undoHold is what UndoHold needs besides key and mark.
type undoHold struct {
	keep string
	ttl  time.Duration
}

// pendingQueue holds one node's pending releases, oldest first.
type pendingQueue struct {
	mu      sync.Mutex
	entries []pendingRelease
	// out: how many entries a drain holds, taken from entries; gone
	// names the compare-and-deletes superseded meanwhile, which the drain
	// skips. Both guarded by mu; gone is emptied when the batch is back.
	out      int
	gone     map[pendingKey]struct{}
	size     atomic.Int64 // len(entries) + out, read without the lock
	draining atomic.Bool
}

// retrier owns the pending releases of every node and the timer that
// retries them. No goroutine runs while nothing is pending.
type retrier struct {
	nodes    []Node
	queues   []*pendingQueue
	every    time.Duration // 0: off
	horizon  time.Duration // ttl assumed when a release does not know it
	timeout  time.Duration
	limit    int
	ctx      context.Context // cancelled by close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	timer    *time.Timer
	armed    bool
	closed   bool
	onceStop sync.Once
}

func newRetrier(nodes []Node, cfg Config) *retrier {
	r := &retrier{
		nodes: nodes, every: cfg.ReleaseRetry, horizon: cfg.MaxTTL,
		timeout: cfg.NodeTimeout, limit: maxPendingPerNode,
		queues: make([]*pendingQueue, len(nodes)),
	}
	if r.horizon <= 0 {
		r.horizon = DefaultConfig().MaxTTL
	}
	for i := range r.queues {
		r.queues[i] = &pendingQueue{}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// add remembers a release of key=token in database db on node i that did
// not get an answer. ttl <= 0: unknown, the horizon applies.
// answeredAbsent: the node did answer "not held", but a straggling SET may
// still land, so the entry only needs confirming.
func (r *retrier) add(i, db int, key, token string, ttl time.Duration, answeredAbsent bool) {
	if ttl <= 0 {
		ttl = r.horizon
	}
	now := time.Now()
	e := pendingRelease{db: db, key: key, token: token, until: now.Add(ttl)}
	if answeredAbsent {
		e.confirmAt = now.Add(r.every)
	}
	r.push(i, e)
}

// addUndo remembers an UndoHold of the round marked at mark (in database
// db) on node i that did not get an answer.
func (r *retrier) addUndo(i, db int, key, mark, keep string, ttl time.Duration) {
	r.push(i, pendingRelease{db: db, key: key, token: mark, until: time.Now().Add(ttl), undo: &undoHold{strings.Clone(keep), ttl}})
}

// addUndoEval remembers an UndoEval of the script round marked at mark
// on node i that did not get an answer; the mark lives ttl.
func (r *retrier) addUndoEval(i int, keys []string, mark string, db int, ttl time.Duration) {
	own := make([]string, len(keys))
	for j, k := range keys {
		own[j] = strings.Clone(k)
	}
	r.push(i, pendingRelease{db: db, key: keys[0], token: mark, until: time.Now().Add(ttl), eval: &undoEval{own, ttl}})
}

// push queues e for node i and arms the next retry round.
func (r *retrier) push(i int, e pendingRelease) {
	if r.every <= 0 {
		return
	}
	// Queued for as long as the lock can live: copies of their own, as a
	// caller's strings may share their memory with many others' (so are
	// an undo's kept token and a script's keys, by addUndo and
	// addUndoEval).
	e.key, e.token = strings.Clone(e.key), strings.Clone(e.token)
	now := time.Now()
	q := r.queues[i]
	q.mu.Lock()
	q.entries = append(q.entries, e)
	r.trimLocked(q, now)
	q.mu.Unlock()
	r.arm()
}

// supersede drops node i's queued compare-and-deletes of key=token in
// database db, because cmd, about to be sent to it, stores that token
// there (see storesToken): what an earlier round left of it is now the
// later round's to keep or undo. Costs one atomic load while node i has
// nothing queued, and none for a command that stores no token (a
// release, a read, an extend).
func (r *retrier) supersede(i, db int, cmd *Cmd) {
	if !storesToken(cmd.Kind) {
		return
	}
	q := r.queues[i]
	if q.size.Load() == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(cmd.Keys) == 0 {
		r.dropLocked(q, pendingKey{db, cmd.Key, cmd.Token})
		return
	}
	for _, k := range cmd.Keys {
		r.dropLocked(q, pendingKey{db, k, cmd.Token})
	}
}

// dropLocked removes the compare-and-deletes named pk from q, and from
// the batch a drain holds. q.mu is held.
func (r *retrier) dropLocked(q *pendingQueue, pk pendingKey) {
	q.entries = slices.DeleteFunc(q.entries, func(e pendingRelease) bool {
		k, ok := e.cad()
		return ok && k == pk
	})
	if q.out > 0 {
		if q.gone == nil {
			q.gone = make(map[pendingKey]struct{})
		}
		q.gone[pk] = struct{}{}
	}
	q.resize()
}

// resize updates q.size; q.mu is held.
func (q *pendingQueue) resize() { q.size.Store(int64(len(q.entries) + q.out)) }

// storesToken reports whether a command of kind k may store Key=Token
// (or each key of Keys=Token) on a node.
func storesToken(k CmdKind) bool { return k.has(factStores) }

// trimLocked drops the oldest entries beyond the limit, then expired ones
// at the front (entries behind them expire on the next drain).
func (r *retrier) trimLocked(q *pendingQueue, now time.Time) {
	drop := max(len(q.entries)-r.limit, 0)
	for drop < len(q.entries) && now.After(q.entries[drop].until) {
		drop++
	}
	if drop > 0 {
		q.entries = append(q.entries[:0:0], q.entries[drop:]...)
	}
	q.resize()
}

// arm schedules the next retry round unless one is scheduled or the
// retrier is closed. Between rounds nothing runs: the timer holds no
// goroutine.
func (r *retrier) arm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.armed {
		return
	}
	r.armed = true
	if r.timer == nil {
		r.timer = time.AfterFunc(r.every, r.round)
		return
	}
	r.timer.Reset(r.every)
}

// round drains every node with pending releases, each on its own
// goroutine (a stalled node must not hold up the others), and schedules
// the next round while anything is left.
func (r *retrier) round() {
	r.mu.Lock()
	r.armed = false
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1) // under mu, so that close never waits on a zero counter being raised
	r.mu.Unlock()
	defer r.wg.Done()
	var wg sync.WaitGroup
	for i, q := range r.queues {
		if q.size.Load() > 0 && q.draining.CompareAndSwap(false, true) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer q.draining.Store(false)
				r.drain(i)
			}()
		}
	}
	wg.Wait()
	if slices.ContainsFunc(r.queues, func(q *pendingQueue) bool { return q.size.Load() > 0 }) {
		r.arm()
	}
}

// drain retries node i's due releases in order, stopping at the first one
// the node does not answer (it is still unreachable; that entry goes last,
// so that one key that always fails cannot hold up the others).
func (r *retrier) drain(i int) {
	q := r.queues[i]
	q.mu.Lock()
	batch := q.entries
	q.entries, q.out = nil, len(batch)
	q.mu.Unlock()
	var keep []pendingRelease
	for j, e := range batch {
		now := time.Now()
		switch {
		case now.After(e.until):
			continue // expired on the node anyway
		case r.ctx.Err() != nil || (!e.confirmAt.IsZero() && now.Before(e.confirmAt)):
			keep = append(keep, e)
			continue
		}
		deleted, sent, err := r.retry(q, r.nodes[i], e)
		switch {
		case !sent:
			// superseded by a later round of the same token
		case err != nil:
			keep = append(append(keep, batch[j+1:]...), e)
			r.putBack(q, keep)
			return
		case deleted || !e.confirmAt.IsZero():
			// done: removed, or absent twice a retry interval apart
		default:
			e.confirmAt = now.Add(r.every)
			keep = append(keep, e)
		}
	}
	r.putBack(q, keep)
}

// retry sends e to n again, unless a later round superseded it (sent
// false); deleted true ends the entry. The command is handed to n under
// q's lock (see supersede); its reply is awaited outside it.
func (r *retrier) retry(q *pendingQueue, n Node, e pendingRelease) (deleted, sent bool, err error) {
	cmd := Cmd{Kind: cmdsOf(e.token).release, Key: e.key, Token: e.token}
	if e.undo != nil {
		cmd = Cmd{Kind: UndoHold, Key: e.key, Mark: e.token, Token: e.undo.keep, TTL: e.undo.ttl}
	}
	if e.eval != nil {
		cmd = Cmd{Kind: UndoEval, Keys: e.eval.keys, Mark: e.token, TTL: e.eval.ttl}
	}
	cmd.DB = e.db
	ch := make(chan Reply, 1)
	q.mu.Lock()
	if pk, ok := e.cad(); ok {
		if _, gone := q.gone[pk]; gone {
			q.mu.Unlock()
			return false, false, nil
		}
	}
	n.Do(time.Now().Add(r.timeout), cmd, ReceiverFunc(func(rep Reply) { ch <- rep }))
	q.mu.Unlock()
	var rep Reply
	select {
	case rep = <-ch:
	case <-r.ctx.Done():
		rep = Reply{Err: r.ctx.Err()}
	}
	if e.undo != nil || e.eval != nil {
		return rep.Err == nil, true, rep.Err
	}
	return rep.OK, true, rep.Err
}

// putBack returns the entries a drain kept in front of those added
// meanwhile (they are older).
func (r *retrier) putBack(q *pendingQueue, keep []pendingRelease) {
	q.mu.Lock()
	if len(q.gone) > 0 {
		keep = slices.DeleteFunc(keep, func(e pendingRelease) bool {
			k, ok := e.cad()
			_, gone := q.gone[k]
			return ok && gone
		})
		clear(q.gone)
	}
	q.out = 0
	q.entries = append(keep, q.entries...)
	r.trimLocked(q, time.Now())
	q.mu.Unlock()
}

// close stops the retries and waits for a running round. Safe to call
// twice.
func (r *retrier) close() {
	r.onceStop.Do(func() {
		r.mu.Lock()
		r.closed = true
		if r.timer != nil {
			r.timer.Stop()
		}
		r.mu.Unlock()
		r.cancel()
		r.wg.Wait()
	})
}

// PendingReleases reports, per node in configuration order, how many
// releases wait to be sent to it again.
func (c *Cluster) PendingReleases() []int {
	out := make([]int, len(c.pending.queues))
	for i, q := range c.pending.queues {
		out[i] = int(q.size.Load())
	}
	return out
}

// Close stops retrying pending releases (what is left expires with its
// ttl on the nodes) and waits for a retry in progress. It does not close
// the nodes. Safe to call twice; the Cluster must not be used afterwards.
func (c *Cluster) Close() error {
	c.pending.close()
	return nil
}
