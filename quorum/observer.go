package quorum

import (
	"errors"
	"time"
)

// Observer learns what the cluster does, for metrics and logs, without the
// quorum package knowing how they are kept. Its methods are called from the
// fan-out goroutines, from the goroutines on which AsyncNodes answer (a
// backend connection's reader) and from callers' goroutines at once, so they
// must be safe for concurrent use, and quick: they run on the lock's
// critical path. An operation started with a Reporter of its own
// (AcquireAsync, ReleaseAsync) is reported to that one instead, but
// for the calls its round answered after its outcome.
type Observer interface {
	// NodesDone reports the calls to nodes within operation op, one
	// NodeResult each, in configuration order: a round's calls together,
	// once its last reply is in, or a single call made outside a round.
	// calls is only valid during the call: an Observer that keeps a
	// NodeResult copies it.
	NodesDone(op string, calls []NodeResult)
	// OpDone reports one quorum operation: its outcome (one of the Outcome
	// constants), its duration, and for operations that grant a lock
	// (acquire, extend, force_set) the validity left out of ttl.
	OpDone(op, outcome string, d time.Duration, validity, ttl time.Duration)
}

// Reporter is told of one operation in one call, in place of the
// Cluster's Observer: an operation started with one (AcquireAsync,
// ReleaseAsync), for a caller that reports it in one with its own work
// (a command and its round). Like an Observer it must be quick and must
// not block.
type Reporter interface {
	// RoundDone reports the operation, once, when its outcome is decided
	// and before its done is called: with the calls of its round
	// answered by then (a release's, or a refused acquire's, are all; an
	// acquire granted by a majority may be waiting for the others). rep
	// stays valid until done returns. The calls answered after it are
	// reported to the Cluster's Observer, in one NodesDone, once the last
	// is in.
	RoundDone(rep *Report)
}

// Report is one operation as a Reporter is told of it: what OpDone and
// its round's NodesDone tell an Observer, in one piece.
type Report struct {
	// Op, Outcome, D, Validity and TTL are OpDone's figures.
	Op, Outcome      string
	D, Validity, TTL time.Duration
	// Calls are the calls of the operation's round answered by the time
	// its outcome was decided, as NodesDone lists them; none where it
	// made no round.
	Calls []NodeResult
}

// NodeResult is one call to one node, as Observer.NodesDone reports it.
type NodeResult struct {
	// Index is the node's place in the Cluster's configuration order
	// (the nodes given to New), Node its Name.
	Index int
	Node  string
	// D is how long the call took: to when the node read the reply
	// (Reply.At), or to the reply's receipt when the node does not say.
	D time.Duration
	// Err is the call's error, nil when the node answered (yes or no).
	Err error
}

// Operation names passed to an Observer.
const (
	OpAcquire  = "acquire"
	OpExtend   = "extend"
	OpRelease  = "release"
	OpGet      = "get"
	OpDelete   = "delete"
	OpExpire   = "expire"
	OpForceSet = "force_set"
	OpInspect  = "inspect"
	// OpReenter is a LockOwner: every LOCK … OWNER, its owner's first
	// hold or one more.
	OpReenter = "reenter"
	OpFence   = "fence"
	// OpScript is a replicated script's round.
	OpScript = "script"
	// OpHandOver is HandOver's round (SET … IFEQ with a new token).
	OpHandOver = "hand_over"
	// OpPubSub: a client's SUBSCRIBE, UNSUBSCRIBE or PUBLISH, broadcast.
	OpPubSub = "pubsub"
	// OpHorizon: a read of the other nodes' lock horizons, for a
	// restarted node's quarantine.
	OpHorizon = "horizon"
	// OpFair: a fair waiter's ticket read, and its leaving the queue.
	OpFair = "fair"
)

// Outcomes passed to Observer.OpDone.
const (
	// OutcomeOK: a majority granted, extended, released or answered.
	OutcomeOK = "ok"
	// OutcomeContended: enough nodes answered, but no majority said yes
	// (held elsewhere, not held by the token, or the validity ran out).
	OutcomeContended = "contended"
	// OutcomeNoQuorum: fewer than a majority of nodes answered.
	OutcomeNoQuorum = "no_quorum"
	// OutcomeError: anything else (a bad ttl, a cancelled caller).
	OutcomeError = "error"
)

// Outcome classifies an operation's error the way OpDone reports it.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case err == ErrNotAcquired, err == ErrNotHeld:
		// The refusals themselves, most outcomes that are not ok:
		// nothing to unwrap.
		return OutcomeContended
	case errors.Is(err, ErrNoQuorum):
		return OutcomeNoQuorum
	case errors.Is(err, ErrNotAcquired), errors.Is(err, ErrNotHeld):
		return OutcomeContended
	}
	return OutcomeError
}

// begin starts an operation's report: the function it returns reports
// the operation's end. With no Observer it costs nothing.
func (c *Cluster) begin(op string) func(err error, validity, ttl time.Duration) {
	if c.cfg.Observer == nil {
		return func(error, time.Duration, time.Duration) {}
	}
	t0 := time.Now()
	return func(err error, validity, ttl time.Duration) {
		c.cfg.Observer.OpDone(op, Outcome(err), time.Since(t0), validity, ttl)
	}
}

// roundDone reports the end of an operation of one round, r (nil: it made
// none), timed from the round's launch: begin's report without a clock
// reading of its own or a closure. A round with a Reporter tells it (see
// reportOp) instead of the Cluster's Observer.
func (c *Cluster) roundDone(op string, r *round, err error, validity, ttl time.Duration) {
	if r != nil && r.reporter != nil {
		r.reportOp(op, err, validity, ttl)
		return
	}
	if c.cfg.Observer == nil {
		return
	}
	var d time.Duration
	if r != nil {
		d = r.elapsed()
	}
	c.cfg.Observer.OpDone(op, Outcome(err), d, validity, ttl)
}

// nodeLatency is a call's latency from its start t0 to the reply rep:
// to when the node read the reply (rep.At), or to now when the node does
// not say.
func nodeLatency(t0 time.Time, rep Reply) time.Duration {
	at := rep.At
	if at.IsZero() {
		at = time.Now()
	}
	return at.Sub(t0)
}

// reportNode reports node i's reply rep to a call within op, which began
// at t0, on its own: for the calls made outside a round.
func (c *Cluster) reportNode(op string, i int, t0 time.Time, rep Reply) {
	if c.cfg.Observer == nil {
		return
	}
	c.cfg.Observer.NodesDone(op, []NodeResult{{Index: i, Node: c.nodes[i].Name(), D: nodeLatency(t0, rep), Err: rep.Err}})
}

// boolOutcome turns a yes/no answer with no error into the error Outcome
// would classify: a Release or Delete that a majority did not confirm is
// contended, not ok.
func boolOutcome(ok bool, err error) error {
	if err == nil && !ok {
		return ErrNotHeld
	}
	return err
}
