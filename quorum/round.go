package quorum

import (
	"slices"
	"sync"
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

// round is one fan-out in flight. Its replies are complete once all is
// closed; ready closes earlier when the round was started with an early
// threshold and that many nodes said yes.
type round struct {
	c     *Cluster
	op    string
	start time.Time
	vote  voter
	early int
	calls []nodeCall // one per node, in configuration order

	mu    sync.Mutex
	got   int
	t     tally // guarded by mu until all is closed
	ready chan struct{}
	all   chan struct{}
	fired bool // ready is closed
}

// nodeCall is the Receiver of one node's reply within a round.
type nodeCall struct {
	r     *round
	i     int
	asked bool
	rep   Reply
}

func (nc *nodeCall) Receive(rep Reply) { nc.r.receive(nc, rep) }

// start asks every node at once and returns the round in flight. early > 0
// closes ready as soon as that many nodes said yes; the other replies are
// still collected (into all).
func (c *Cluster) start(op string, ask asker, vote voter, early int) *round {
	r := &round{c: c, op: op, start: time.Now(), vote: vote, early: early,
		calls: make([]nodeCall, len(c.nodes)), ready: make(chan struct{}), all: make(chan struct{})}
	deadline := r.start.Add(c.cfg.NodeTimeout)
	for i, n := range c.nodes {
		nc := &r.calls[i]
		nc.r, nc.i = r, i
		cmd, ok := ask(i)
		if !ok {
			r.receive(nc, Reply{})
			continue
		}
		nc.asked = true
		n.Do(deadline, cmd, nc)
	}
	return r
}

// receive takes node nc.i's reply: reported, vetoed while the node's votes
// do not count (checked after the call, so that a restart meanwhile counts
// too), its error named by the node, and tallied.
func (r *round) receive(nc *nodeCall, rep Reply) {
	if nc.asked {
		c := r.c
		n := c.nodes[nc.i]
		c.reportNode(r.op, n, r.start, rep.Err)
		if rep.Err == nil {
			if err := c.health.veto(nc.i); err != nil {
				rep = Reply{Err: err}
			}
		}
		if rep.Err != nil {
			rep = Reply{Err: &NodeError{Node: n.Name(), Err: rep.Err}}
		}
	}
	r.mu.Lock()
	nc.rep = rep
	r.got++
	r.t.add(rep.Err == nil && r.vote(rep), rep.Err)
	fire := !r.fired && (r.got == len(r.calls) || (r.early > 0 && r.t.yes >= r.early))
	if fire {
		r.fired = true
	}
	last := r.got == len(r.calls)
	r.mu.Unlock()
	if fire {
		close(r.ready)
	}
	if last {
		close(r.all)
	}
}

// waitReady waits for ready and returns the tally so far.
func (r *round) waitReady() tally {
	<-r.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.t
}

// wait waits for every reply and returns the tally.
func (r *round) wait() tally {
	<-r.all
	return r.t
}

// reply is node i's reply; only once every reply is in.
func (r *round) reply(i int) Reply { return r.calls[i].rep }

// collect runs one round and waits for every reply.
func (c *Cluster) collect(op string, ask asker, vote voter) (*round, tally) {
	r := c.start(op, ask, vote, 0)
	return r, r.wait()
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

// failRound is the error of a round that did not win: a *NoQuorumError when
// too few nodes answered, failed otherwise.
func (c *Cluster) failRound(t *tally, failed error) error {
	if t.answered() < c.Quorum() {
		return c.noQuorum(t)
	}
	return failed
}

// grant declares a round that grants (or extends) a lock: Redlock's rule
// is that a majority said yes and time is left of the lock's ttl.
type grant struct {
	op  string
	ttl time.Duration
	ask asker
	// vote is how a reply votes; nil: Reply.OK.
	vote voter
	// early answers as soon as a majority said yes (an acquire); without
	// it every reply is awaited.
	early bool
	// agreed computes the validity from the ttl that a majority of the
	// yes replies report (Reply.TTL: a relative extend) instead of ttl.
	agreed bool
	// failed is the error of a round that enough nodes answered but that
	// did not win.
	failed error
	// undo takes back what a failed round granted anywhere, with every
	// reply in; nil for an extend, which undoes nothing (SPEC §1: the
	// lock stands until the validity reported before).
	undo func(*round)
}

// grantRound runs g and returns the validity of the grant, the round (its
// replies are complete unless g.early won), or the failure.
func (c *Cluster) grantRound(g grant) (time.Duration, *round, error) {
	if g.ttl <= 0 {
		return 0, nil, ErrInvalidTTL
	}
	if g.vote == nil {
		g.vote = okVote
	}
	early := 0
	if g.early {
		early = c.Quorum()
	}
	t0 := c.cfg.Now()
	r := c.start(g.op, g.ask, g.vote, early)
	t := r.waitReady()
	if t.yes >= c.Quorum() {
		ttl := g.ttl
		if g.agreed {
			ttl = r.agreedTTL(c.Quorum())
		}
		if v := Validity(ttl, c.cfg.Now().Sub(t0), c.cfg.DriftFactor); v > 0 {
			return v, r, nil
		}
	}
	// Straggling replies are awaited before the undo, or a late grant
	// would land after it.
	t = r.wait()
	if g.undo != nil {
		g.undo(r)
	}
	return 0, r, c.failRound(&t, g.failed)
}

// agreedTTL is the q-th largest ttl among the yes replies: q nodes hold
// the key at least that long. Every reply is in.
func (r *round) agreedTTL(q int) time.Duration {
	<-r.all
	var ttls []time.Duration
	for i := range r.calls {
		if rep := r.calls[i].rep; rep.Err == nil && r.vote(rep) {
			ttls = append(ttls, rep.TTL)
		}
	}
	if len(ttls) < q {
		return 0
	}
	slices.Sort(ttls)
	return ttls[len(ttls)-q]
}
