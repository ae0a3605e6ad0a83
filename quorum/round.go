package quorum

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Every operation of the Cluster is one or more rounds. A round asks each
// node one Cmd at once (all under one per-node deadline), turns each reply
// into a vote (the health veto applied after the call, errors named by
// node), and tallies the votes. What an operation declares is only what
// each node is asked, how a reply votes, and, for operations that grant a
// lock, what undoes a failed round (grantRound). The fan-out, the deadline,
// the tally, the majority and validity rule and the reports to the
// Observer are here, once.

// asker says what node i is asked in a round; false leaves the node out (it
// counts as having answered "no" at once).
type asker func(i int) (Cmd, bool)

// same asks every node the same command.
func same(cmd Cmd) asker { return func(int) (Cmd, bool) { return cmd, true } }

// voter says whether a reply (without error) is a "yes".
type voter func(Reply) bool

func okVote(r Reply) bool { return r.OK }
func anyVote(Reply) bool  { return true }

// round is one fan-out in flight. Its replies are complete once every
// node answered (then runs onAll); onReady runs earlier when the round has
// an early threshold and that many nodes said yes. The hooks run on the
// goroutine of the last reply they wait for (a node's reader), or on the
// caller's within launch when a node answers at once; they must not block.
//
// A round is allocated for one fan-out (collectThen, grantThen): its calls
// stay valid for as long as anything holds the round, a caller that read
// an early decision or the goroutine of a late reply alike. So the last
// reply can report the whole round's calls from them (see reportUntold) after
// the decision went out. The rounds of the async hot paths (AcquireAsync,
// ReleaseAsync), whose outcome hands the round to nobody, are pooled
// instead (see hold): such a round counts who holds it and goes back
// to its pool only once the last of them let go.
type round struct {
	c     *Cluster
	op    string
	start time.Time
	// took is how long the round took to its decision, when that
	// decision read the real clock for it (a grant's validity); else 0.
	took time.Duration
	vote voter
	// early > 0 runs onReady as soon as that many nodes said yes (else
	// once every reply is in).
	early int
	calls []nodeCall // one per node, in configuration order
	// same is what every node is asked when launch gets no asker.
	same *Cmd
	// run is the record this round is part of (a grant, see grantThen; a
	// release, see releaseThen), whose steps take the place of onReady
	// and onAll; nil for a collect of closures.
	run runner
	// pooled: r belongs to a pooled record, recycled once refs, the
	// holders of r, drop to zero (see hold).
	pooled bool
	refs   atomic.Int32
	// reporter, when set, is told of r's operation (see Reporter) in
	// place of the Cluster's Observer; only a pooled round's. rep is what
	// it is told, late that the outcome was decided before the last reply
	// came, so that the last holder reports the calls answered after it
	// (see reportOp).
	reporter Reporter
	rep      Report
	late     bool

	mu      sync.Mutex
	got     int
	t       tally // guarded by mu until every reply is in
	fired   bool  // onReady has run or is running
	onReady func(tally)
	onAll   func(tally)
	runAll  bool // run waits for every reply (see grantRun.ready)

	inline [3]nodeCall // calls, for up to three nodes
	// results is where report lists the calls for the Observer, written
	// once, by the last reply; its array inline for up to three nodes.
	results       []NodeResult
	inlineResults [3]NodeResult
}

// runner is the record a round is part of: its steps are methods, so a
// round needs no closure, and the record can be pooled.
type runner interface {
	// ready runs once a majority said yes (a round with an early
	// threshold) or every reply is in.
	ready(tally)
	// failed runs once every reply is in, where ready left the decision
	// to it (runAll).
	failed(tally)
	// recycle takes the record back to its pool; only a pooled round's,
	// once nothing holds it.
	recycle()
}

// A pooled round is held by each of its node calls until that node's
// reply was received (its hooks run included), by launch until it has
// asked every node, and by its outcome until the caller's callback has
// returned: refs counts them, and the last to let go recycles the
// record. A node hands its reply to a call exactly once (Node.Do), and
// nothing else keeps a pooled round: its outcome gives the caller values,
// never the round; the Observer's report is only valid during the call,
// a Reporter's until the callback returned;
// a horizon wait holds the call until its reply is received; an undo's
// release round reads the grant round before it calls back, never after;
// pending releases copy the key and token.
func (r *round) hold(pooled bool) {
	r.pooled = pooled
	if pooled {
		r.refs.Store(int32(len(r.calls) + 2))
	}
}

// unref lets go of one hold on r; the last one reports the calls that
// r's Reporter was not told of (see reportOp), and recycles r. A round
// that is not pooled is left to the collector.
func (r *round) unref() {
	if r.pooled && r.refs.Add(-1) == 0 {
		if r.late {
			r.reportUntold()
		}
		r.run.recycle()
	}
}

// reuse clears r for its next round, keeping the room of its calls and
// results where they are not inline.
func (r *round) reuse() {
	calls, results := r.calls, r.results
	if cap(calls) <= len(r.inline) {
		calls, results = nil, nil
	}
	*r = round{}
	r.calls, r.results = calls[:0], results[:0]
}

// nodeCall is the Receiver of one node's reply within a round.
type nodeCall struct {
	r     *round
	i     int
	asked bool
	// kind and ttl of the command asked: what the horizon needs of it.
	kind CmdKind
	ttl  time.Duration
	rep  Reply
	// in: the reply was received (guarded by r.mu); told: the call was
	// in r's Reporter's report (see reportOp).
	in, told bool
	// took and err are the call's latency and error as the node gave
	// them (before the veto and the naming by node), for the Observer;
	// recorded on receipt, only with an Observer.
	took time.Duration
	err  error
}

// Receive takes the node's reply. A yes that left a key with an expiry
// counts only once the node's lock horizon covers that expiry (see
// horizons): almost always known at once, else after a raise, which
// replaces the reply with its error where it failed.
func (nc *nodeCall) Receive(rep Reply) {
	need, ok := nc.r.c.horizons.covers(nc.i, leftTTL(nc.kind, nc.ttl, &rep), rep.At)
	if ok {
		nc.r.receive(nc, rep)
		return
	}
	nc.receiveRaised(need, rep)
}

// receiveRaised takes the reply once the horizon reaches need. Apart from
// Receive so that the closure's copy of rep is made only on this path.
func (nc *nodeCall) receiveRaised(need int64, rep Reply) {
	nc.r.c.horizons.wait(nc.i, need, func(err error) {
		if err != nil {
			rep = Reply{Err: err}
		}
		nc.r.receive(nc, rep)
	})
}

// observed says whether r's calls are reported: to the Cluster's
// Observer or to r's Reporter.
func (r *round) observed() bool { return r.reporter != nil || r.c.cfg.Observer != nil }

// init prepares r in place, its calls inline when they fit; a Reporter
// is set before. launch starts it.
func (r *round) init(c *Cluster, op string, vote voter, early int) {
	r.c, r.op, r.vote, r.early = c, op, vote, early
	switch n := len(c.nodes); {
	case n <= len(r.inline):
		r.calls = r.inline[:n]
		r.results = r.inlineResults[:0]
	case cap(r.calls) >= n: // a pooled round's, cleared by reuse
		r.calls = r.calls[:n]
		clear(r.calls)
		if r.observed() && cap(r.results) < n {
			r.results = make([]NodeResult, 0, n)
		}
	default:
		r.calls = make([]nodeCall, n)
		if r.observed() {
			r.results = make([]NodeResult, 0, n)
		}
	}
}

// launch asks every node at once, in the Cluster's database: the one
// place where a Cmd gets its DB, and where a round that stores a token
// supersedes the queued undos of that token's earlier rounds (see
// retrier.supersede). A nil ask asks every node r.same.
func (r *round) launch(ask asker) {
	r.start, r.took = time.Now(), 0
	deadline := r.start.Add(r.c.cfg.NodeTimeout)
	for i, n := range r.c.nodes {
		nc := &r.calls[i]
		nc.r, nc.i = r, i
		var cmd Cmd
		ok := true
		if ask != nil {
			cmd, ok = ask(i)
		} else {
			cmd = *r.same
		}
		if !ok {
			r.receive(nc, Reply{})
			continue
		}
		cmd.DB = r.c.db
		nc.asked, nc.kind, nc.ttl = true, cmd.Kind, cmd.TTL
		r.c.pending.supersede(i, cmd.DB, &cmd)
		n.Do(deadline, cmd, nc)
	}
	r.unref()
}

// receive takes node nc.i's reply: recorded for the report, vetoed while
// the node's votes do not count (checked after the call, so that a
// restart meanwhile counts too), its error named by the node, and
// tallied. The last reply reports every call of the round, before the
// hooks it runs.
func (r *round) receive(nc *nodeCall, rep Reply) {
	if nc.asked {
		c := r.c
		n := c.nodes[nc.i]
		if r.observed() {
			// Written before r.mu is taken below, and read by the last
			// reply (or the outcome, see reportOp) only after it took
			// r.mu in turn.
			nc.took, nc.err = nodeLatency(r.start, rep), rep.Err
		}
		if rep.Err != nil {
			if text := keyReply(nc.kind, rep.Err); text != "" {
				// An error reply about the key (WRONGTYPE): the node
				// answered, and the answer votes no.
				rep = Reply{ErrReply: text, TTL: rep.TTL, Shard: rep.Shard, At: rep.At}
			}
		}
		if rep.Err == nil {
			if err := c.health.veto(nc.i, rep.Shard); err != nil {
				rep = Reply{Err: err}
			}
		}
		if rep.Err != nil {
			rep = Reply{Err: &NodeError{Node: n.Name(), Err: rep.Err}}
		}
	}
	r.mu.Lock()
	nc.rep, nc.in = rep, true
	r.got++
	r.t.add(rep.Err == nil && r.vote(rep), rep.Err)
	last := r.got == len(r.calls)
	var ready, all func(tally)
	var runReady, runAll bool
	if !r.fired && (last || (r.early > 0 && r.t.yes >= r.early)) {
		r.fired, ready, runReady = true, r.onReady, r.run != nil
	}
	if last {
		all, r.onAll = r.onAll, nil
		runAll, r.runAll = r.runAll, false
	}
	t := r.t
	r.mu.Unlock()
	if last && r.reporter == nil {
		// A round with a Reporter reports through it (see reportOp).
		// Not reused before this reply lets go of it (see hold), r's
		// calls and results are still this round's.
		r.reportUntold()
	}
	switch {
	case runReady:
		r.run.ready(t)
	case ready != nil:
		ready(t)
	}
	switch {
	case runAll:
		r.run.failed(t)
	case all != nil:
		all(t)
	}
	r.unref()
}

// nodeResults lists, in r.results, the calls of every node r asked and
// that keep says to list; with every reply in, or under r.mu with a keep
// that lists only calls answered (a call's other fields are its
// launch's and its reply's until then).
func (r *round) nodeResults(keep func(*nodeCall) bool) []NodeResult {
	res := r.results[:0]
	for i := range r.calls {
		if nc := &r.calls[i]; keep(nc) && nc.asked {
			res = append(res, NodeResult{Index: i, Node: r.c.nodes[i].Name(), D: nc.took, Err: nc.err})
		}
	}
	return res
}

// reportOp tells r's Reporter of r's operation as its outcome is
// decided, before the outcome goes to its caller: with the calls
// answered by then. The calls answered later are left to r's last holder
// (see unref, reportUntold), which lets go only once the caller's callback
// returned and the last reply was received, so r.results is free again.
func (r *round) reportOp(op string, err error, validity, ttl time.Duration) {
	r.rep = Report{Op: op, Outcome: Outcome(err), D: r.elapsed(), Validity: validity, TTL: ttl}
	r.mu.Lock()
	r.late = r.got < len(r.calls)
	r.rep.Calls = r.nodeResults(tell)
	r.mu.Unlock()
	r.reporter.RoundDone(&r.rep)
}

// elapsed is how long r has run: to its decision where that read the
// clock, else to now.
func (r *round) elapsed() time.Duration {
	if r.took > 0 {
		return r.took
	}
	return time.Since(r.start)
}

// tell marks a call answered in time for the Reporter's report; under
// r.mu.
func tell(nc *nodeCall) bool {
	nc.told = nc.in
	return nc.told
}

// reportUntold gives the Cluster's Observer, in one NodesDone, the calls
// of r that no Reporter was told of (see reportOp): all of them where r
// has none, those answered after its outcome where it has one. Every
// reply is in.
func (r *round) reportUntold() {
	if o := r.c.cfg.Observer; o != nil {
		if res := r.nodeResults(untold); len(res) > 0 {
			o.NodesDone(r.op, res)
		}
	}
}

func untold(nc *nodeCall) bool { return !nc.told }

// afterAll runs f once every reply is in: now, if they are. A nil f is
// r.run's failed step, a method, so a record waits without a closure.
func (r *round) afterAll(f func(tally)) {
	r.mu.Lock()
	if r.got < len(r.calls) {
		r.onAll, r.runAll = f, f == nil
		r.mu.Unlock()
		return
	}
	t := r.t
	r.mu.Unlock()
	if f == nil {
		r.run.failed(t)
		return
	}
	f(t)
}

// reply is node i's reply; only once every reply is in.
func (r *round) reply(i int) Reply { return r.calls[i].rep }

// replyOr is node i's reply, or, where the caller stopped waiting for the
// round (err, from collectCtx; r is then nil), err as every node's: a
// caller gone before the replies counts none of them.
func (r *round) replyOr(i int, err error) Reply {
	if err != nil {
		return Reply{Err: err}
	}
	return r.reply(i)
}

// all says whether round r left nothing on any node: none landed (see
// landed) under keep. Every reply is in.
func (r *round) all(keep voter) bool {
	for i := range r.calls {
		if r.landed(i, keep) {
			return false
		}
	}
	return true
}

// collect runs one round and waits for every reply, whatever a caller's
// ctx says: for the rounds that nobody waits to call off (a fair waiter's
// leave, a writing script's round and its undo; see Eval).
func (c *Cluster) collect(op string, ask asker, vote voter) (*round, tally) {
	r, t, _ := c.collectCtx(context.Background(), op, ask, vote)
	return r, t
}

// collectCtx is collect that stops waiting when ctx is done (see await):
// the round then runs to its end without the caller.
func (c *Cluster) collectCtx(ctx context.Context, op string, ask asker, vote voter) (*round, tally, error) {
	return awaitThen(ctx, func(then func(*round, tally)) { c.collectThen(op, ask, vote, then) })
}

// await waits for the outcome that start hands to give on ch, or for ctx
// to end, whichever comes first; an outcome given before ctx ended wins.
// A caller already gone starts nothing. When ctx ends first, await
// returns ctx's error at once and the outcome, when it comes, goes to
// give's abandon. The round itself always runs to its end, so its replies
// are still reported.
func await[T any](ctx context.Context, start func(ch chan T)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	return awaitSent(ctx, start)
}

// awaitSent is await for the rounds that are sent whatever ctx says (a
// release, a delete: an unlock sent just before its client hangs up still
// lands): start runs even for a caller already gone, and only the wait
// ends with ctx.
func awaitSent[T any](ctx context.Context, start func(ch chan T)) (T, error) {
	var zero T
	ch := make(chan T, 1)
	start(ch)
	done := ctx.Done()
	if done == nil {
		// A ctx that never ends (the releases', the undos'): a plain
		// receive, no select.
		return <-ch, nil
	}
	select {
	case o := <-ch:
		return o, nil
	case <-done:
	}
	// The one slot of ch decides: filled by the outcome (taken here), or
	// by the caller leaving (the outcome then goes to abandon).
	select {
	case o := <-ch:
		return o, nil
	case ch <- zero:
		return zero, ctx.Err()
	}
}

// awaitThen is await for an outcome that start hands on as two values, to
// the then it is given (the form of the operations that call back): an
// outcome that comes after ctx ended is dropped.
func awaitThen[A, B any](ctx context.Context, start func(then func(A, B))) (A, B, error) {
	if err := ctx.Err(); err != nil {
		var a A
		var b B
		return a, b, err
	}
	return awaitSentThen(ctx, start)
}

// awaitSentThen is awaitThen for the rounds that are sent whatever ctx
// says (see awaitSent).
func awaitSentThen[A, B any](ctx context.Context, start func(then func(A, B))) (A, B, error) {
	type out struct {
		a A
		b B
	}
	o, err := awaitSent(ctx, func(ch chan out) {
		start(func(a A, b B) { give(ch, out{a, b}, nil) })
	})
	return o.a, o.b, err
}

// orLeft is an outcome of a value and an error as awaitThen and
// awaitSentThen give it, with left, their own error: a caller that left
// before the outcome gets ctx's error, and no value.
func orLeft[A any](a A, err, left error) (A, error) {
	if left != nil {
		var zero A
		return zero, left
	}
	return a, err
}

// give hands outcome o to await, or, when its caller has left, to
// abandon (nil: dropped), which must not block: it takes back what
// nobody will use.
func give[T any](ch chan T, o T, abandon func(T)) {
	select {
	case ch <- o:
	default:
		if abandon != nil {
			abandon(o)
		}
	}
}

// collectThen runs one round and calls then with every reply in.
func (c *Cluster) collectThen(op string, ask asker, vote voter, then func(*round, tally)) {
	r := &round{}
	r.init(c, op, vote, 0)
	r.onReady = func(t tally) { then(r, t) }
	r.launch(ask)
}

// tally is the outcome of a yes/no vote over all nodes.
type tally struct {
	yes, no int
	errs    *multierror.Error
}

func (t *tally) add(yes bool, err error) {
	switch {
	case err != nil:
		t.errs = multierror.Append(t.errs, err)
	case yes:
		t.yes++
	default:
		t.no++
	}
}

func (t *tally) answered() int { return t.yes + t.no }

func (c *Cluster) noQuorum(t *tally) error {
	return &NoQuorumError{Answered: t.answered(), Total: len(c.nodes), Errs: t.errs}
}

// heard is the rule every decision starts from: a *NoQuorumError when
// fewer than a majority of nodes answered (the outcome cannot be known),
// nil otherwise.
func (c *Cluster) heard(t *tally) error {
	if t.answered() < c.Quorum() {
		return c.noQuorum(t)
	}
	return nil
}

// majority is a yes/no vote's verdict: whether a majority said yes, or
// heard's *NoQuorumError.
func (c *Cluster) majority(t *tally) (bool, error) {
	if err := c.heard(t); err != nil {
		return false, err
	}
	return t.yes >= c.Quorum(), nil
}

// failRound is the error of a round that did not win: a *NoQuorumError when
// too few nodes answered, failed otherwise.
func (c *Cluster) failRound(t *tally, failed error) error {
	if err := c.heard(t); err != nil {
		return err
	}
	return failed
}

// grant declares a round that grants (or extends) a lock: Redlock's rule
// is that a majority said yes and time is left of the lock's ttl.
type grant struct {
	op  string
	ttl time.Duration
	// cmd is what every node is asked.
	cmd Cmd
	// vote is how a reply votes; nil: Reply.OK.
	vote voter
	// early answers as soon as a majority said yes (an acquire); without
	// it every reply is awaited.
	early bool
	// agreed computes the validity from the ttl that a majority of the
	// yes replies report (Reply.TTL: a relative extend) instead of ttl.
	agreed bool
	// agree, with every reply in, says whether the yes replies agree on
	// one grant (an owner's hold: one token); nil: any majority of yes
	// replies does. Only without early.
	agree func(r *round) bool
	// failed is the error of a round that enough nodes answered but that
	// did not win.
	failed error
	// undo takes back what a failed round granted anywhere, with every
	// reply in, and then calls done; nil for an extend, which undoes
	// nothing (the lock stands until the validity reported
	// before).
	undo func(r *round, done func())
	// left, when set, runs once a round whose caller had stopped waiting
	// (see undoLate) is undone, granted or not: what the caller would
	// have done next (a fair waiter leaves its queue).
	left func()
	// kept, when set, is a reply that left the node without this round's
	// grant (a refusal): a failed round where every node answered so has
	// nothing to undo. With no undo, the undo is a release of cmd's token
	// wherever kept does not hold (undoGrant), made only when needed.
	kept voter
}

// grantRound runs g and returns the validity of the grant, the round (its
// replies are complete unless g.early won), or the failure. It stops
// waiting when ctx is done (see await); a grant that lands after that is
// undone as a failed round's would be.
func (c *Cluster) grantRound(ctx context.Context, g grant) (time.Duration, *round, error) {
	var abandon func(granted)
	if ctx.Done() != nil && (g.undo != nil || g.kept != nil) {
		// Only a grant that can be undone needs taking back (an extend's
		// cannot): its closure, and g's copy on the heap, cost the others
		// nothing.
		abandon = c.undoLate(g)
	}
	o, err := await(ctx, func(ch chan granted) {
		c.grantThen(g, func(v time.Duration, r *round, err error) { give(ch, granted{v, r, err}, abandon) })
	})
	if err != nil {
		return 0, nil, err
	}
	return o.v, o.r, o.err
}

// granted is a grant round's outcome.
type granted struct {
	v   time.Duration
	r   *round
	err error
}

// undoLate takes back the grant of g that came after its caller was gone,
// once every reply is in, as a failed round's grants are (grant.undo),
// and then runs g.left.
func (c *Cluster) undoLate(g grant) func(granted) {
	return func(o granted) {
		done := g.left
		if done == nil {
			done = func() {}
		}
		if o.err != nil {
			done() // a failed round undid itself
			return
		}
		c.undoAfterAll(&g, o.r, done)
	}
}

// undoAfterAll undoes g, granted by round r to a caller that has left,
// once every reply is in, as a failed round's grants are (grant.undo),
// and then calls done.
func (c *Cluster) undoAfterAll(g *grant, r *round, done func()) {
	r.afterAll(func(tally) {
		if undo := c.undoOf(g, r); undo != nil {
			undo(r, done)
			return
		}
		done()
	})
}

// undoOf is what takes back the grants of g's round r, every reply in:
// g.undo, or, with kept, a release of g's token wherever kept does not
// hold (nil where every node kept its state).
func (c *Cluster) undoOf(g *grant, r *round) func(*round, func()) {
	if g.kept == nil {
		return g.undo
	}
	if r.all(g.kept) {
		return nil // every node refused: nothing was granted anywhere
	}
	if g.undo != nil {
		return g.undo
	}
	return c.undoGrant(g.op, g.cmd.Key, g.cmd.Token, g.ttl, g.kept)
}

// grantThen runs g and calls then with its outcome, as grantRound returns
// it: once, without blocking the caller, after the undo of a failed round.
func (c *Cluster) grantThen(g grant, then func(time.Duration, *round, error)) {
	if g.ttl <= 0 {
		then(0, nil, ErrInvalidTTL)
		return
	}
	c.startGrant(&grantRun{then: then}, g, false)
}

// startGrant launches gr's round of g (g.ttl > 0); pooled: gr came from
// grantPool, and goes back to it once nothing holds it.
func (c *Cluster) startGrant(gr *grantRun, g grant, pooled bool) {
	if g.vote == nil {
		g.vote = okVote
	}
	early := 0
	if g.early {
		early = c.Quorum()
	}
	gr.g = g
	if !c.realClock {
		gr.t0 = c.cfg.Now()
	}
	r := &gr.round
	r.init(c, g.op, g.vote, early)
	r.run, r.same = gr, &gr.g.cmd
	r.hold(pooled)
	r.launch(nil)
}

// grantRun is a grant's round in flight with what deciding it needs, in
// one allocation: its steps are methods, not closures.
type grantRun struct {
	round
	g  grant
	t0 time.Time // the validity's start, when the clock is not time.Now
	// then gets the outcome; or, where it is nil, acquired does, as
	// grantAsync's caller, or, where that is nil too, waited does, with
	// the record (see Cluster.grantPooled).
	then     func(time.Duration, *round, error)
	acquired func(Lock, error)
	waited   func(lockOut)
}

// grantPool holds the grant records of the rounds whose outcome hands
// the round to nobody (grantPooled).
var grantPool = sync.Pool{New: func() any { return new(grantRun) }}

// recycle implements runner.
func (gr *grantRun) recycle() {
	gr.round.reuse()
	gr.g, gr.t0, gr.then, gr.acquired, gr.waited = grant{}, time.Time{}, nil, nil, nil
	grantPool.Put(gr)
}

// finish hands the outcome on, and then lets go of the round.
func (gr *grantRun) finish(v time.Duration, err error) {
	r := &gr.round
	if gr.then != nil {
		gr.then(v, r, err)
	} else if l, err := gr.c.acquired(r, &gr.g, v, err); gr.acquired != nil {
		gr.acquired(l, err)
	} else {
		// The caller who waited may have left: a grant is then taken
		// back (takeBack) while this outcome still holds the round.
		gr.waited(lockOut{l, err, gr})
	}
	r.unref()
}

// ready decides the round once a majority said yes or every reply is in:
// granted while validity is left, else failed once every reply is in.
func (gr *grantRun) ready(t tally) {
	r, c, g := &gr.round, gr.c, &gr.g
	if t.yes >= c.Quorum() && (g.agree == nil || g.agree(r)) {
		ttl := g.ttl
		if g.agreed {
			ttl = r.agreedTTL(c.Quorum())
		}
		start := gr.t0
		if c.realClock {
			start = r.start // read before any node was asked
		}
		took := c.cfg.Now().Sub(start)
		if v := Validity(ttl, took, c.cfg.DriftFactor); v > 0 {
			if c.realClock {
				r.took = took // the round's decision: its report's D
			}
			gr.finish(v, nil)
			return
		}
	}
	// Straggling replies are awaited before the undo, or a late grant
	// would land after it.
	r.afterAll(nil) // gr.failed
}

// failed ends a round that did not win, every reply in: its undo, then
// the outcome.
func (gr *grantRun) failed(t tally) {
	r, g := &gr.round, &gr.g
	err := gr.c.failRound(&t, g.failed)
	undo := gr.c.undoOf(g, r)
	if undo == nil {
		gr.finish(0, err)
		return
	}
	undo(r, func() { gr.finish(0, err) })
}

// agreedTTL is the q-th largest ttl among the yes replies: q nodes hold
// the key at least that long. Every reply is in.
func (r *round) agreedTTL(q int) time.Duration {
	var ttls []time.Duration
	for i := range r.calls {
		if rep := r.calls[i].rep; rep.Err == nil && r.vote(rep) {
			ttls = append(ttls, rep.TTL)
		}
	}
	ttl, _ := qthLargest(ttls, q)
	return ttl
}

// qthLargest is the q-th largest of xs (sorted in place): the most that q
// of them reach. false, and the zero value, when xs has fewer than q.
func qthLargest[T cmp.Ordered](xs []T, q int) (T, bool) {
	if q < 1 || len(xs) < q {
		var zero T
		return zero, false
	}
	slices.Sort(xs)
	return xs[len(xs)-q], true
}

// landed says whether round g may have left something on node i: the
// node did not answer g, answered with an error reply (a script that
// failed on a key of another type may have written before), or answered
// with a reply that keep does not hold for. Every reply of g is in.
func (g *round) landed(i int, keep voter) bool {
	rep := g.reply(i)
	return rep.Err != nil || rep.ErrReply != "" || !keep(rep)
}

// errorReply is the error reply (Reply.ErrReply) that at least q nodes
// gave, and the indexes of the nodes that gave it; every reply is in.
func (r *round) errorReply(q int) (text string, nodes []int) {
	for i := range r.calls {
		e := r.calls[i].rep.ErrReply
		if e == "" || e == text {
			continue
		}
		nodes = nodes[:0]
		for j := range r.calls {
			if r.calls[j].rep.ErrReply == e {
				nodes = append(nodes, j)
			}
		}
		if len(nodes) >= q {
			return e, nodes
		}
		text = e
	}
	return "", nil
}

// eachUnanswered calls f with every node that r asked and whose reply
// never came (see unanswered): the nodes that must be asked again later.
// Every reply is in.
func (r *round) eachUnanswered(f func(i int)) {
	for i := range r.calls {
		if r.calls[i].asked && unanswered(r.calls[i].rep) {
			f(i)
		}
	}
}

// Broadcast asks every node cmd in one round (the fan-out, deadline, veto
// and per-node reports of every operation) and calls then with each
// node's reply in configuration order once every reply is in; an error
// names its node. It decides nothing: it is for commands that are not a
// vote, such as the clients' pub/sub. The nodes are asked before it
// returns, so two Broadcasts made in order reach each node in order.
// then may be nil.
func (c *Cluster) Broadcast(op string, cmd Cmd, then func([]Reply)) {
	c.collectThen(op, same(cmd), anyVote, func(r *round, _ tally) {
		if then == nil {
			return
		}
		out := make([]Reply, len(r.calls))
		for i := range r.calls {
			out[i] = r.reply(i)
		}
		then(out)
	})
}
