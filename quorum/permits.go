package quorum

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockd/redlockd/internal/slot"
)

// Semaphores (LOCK … PERMITS n).
//
// A count of holders per node, granted on a majority, does not bound the
// holders: with n = 2 on three nodes, A counted on {1,2}, B on {2,3} and C
// on {1,3} each have a majority while no node counts more than two, and
// three hold a 2-permit semaphore. So a semaphore of n permits is n
// ordinary Redlock mutexes, its slots 0..n-1 (PermitSlotKey), and a holder
// holds one slot on a majority. Two holders of one slot would need two
// majorities that do not meet, so at most one holds each slot, and at most
// n hold the semaphore.
//
// The key itself holds a marker naming n (PermitsMarker) on every node
// where a slot is held, for at least as long as the longest slot there:
// an exclusive lock of the key (SET NX) finds it present, and a permit is
// refused where the key holds anything but the marker of its n. A holder
// of a majority of slots and a holder of the key on a majority would meet
// on a node holding both, which no node allows.
//
// A permit's token names its n and slot (NewPermitToken), so that
// RENEW, UNLOCK, KEEPALIVE and FENCE reach the slot from the token alone,
// on any proxy: every piece of state is on the nodes, written by each
// node's command in one atomic step.

// MaxPermits is the largest n of a semaphore: a node reads every slot of
// the key in one step.
const MaxPermits = 1000

const (
	permitPrefix        = "permit:"
	PermitsMarkerPrefix = "redlockd:permits:"
	// permitTries bounds the slots one acquire tries after its read, so
	// that a crowd racing for the last free slots ends soon.
	permitTries = 3
)

// NewPermitToken returns a fresh token for slot of a semaphore of n
// permits: "permit:<n>:<slot>:<random>".
func NewPermitToken(n, slot int) string {
	return permitPrefix + strconv.Itoa(n) + ":" + strconv.Itoa(slot) + ":" + NewToken()
}

// IsPermitToken reports whether token has the form of a permit's token.
func IsPermitToken(token string) bool {
	_, _, ok := ParsePermitToken(token)
	return ok
}

// ParsePermitToken reads the n and slot a permit's token names.
func ParsePermitToken(token string) (n, slot int, ok bool) {
	rest, ok := strings.CutPrefix(token, permitPrefix)
	if !ok {
		return 0, 0, false
	}
	ns, rest, ok1 := strings.Cut(rest, ":")
	ss, _, ok2 := strings.Cut(rest, ":")
	n, err1 := strconv.Atoi(ns)
	slot, err2 := strconv.Atoi(ss)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || n < 1 || n > MaxPermits || slot < 0 || slot >= n {
		return 0, 0, false
	}
	return n, slot, true
}

// PermitSlotPrefix is what every slot key of key starts with; the hash
// tag keeps the slots in key's Redis Cluster slot.
func PermitSlotPrefix(key string) string { return "redlockd:permit:" + slot.Tagged(key) + ":" }

// PermitSlotKey is where the nodes keep slot of key's semaphore.
func PermitSlotKey(key string, i int) string { return PermitSlotPrefix(key) + strconv.Itoa(i) }

// permitFenceKey is the fencing counter of one slot: a slot is a mutex,
// so its fences increase as those of any lock do.
func permitFenceKey(key string, i int) string {
	return "redlockd:fence:" + slot.Tagged(key) + ":permit:" + strconv.Itoa(i)
}

// fenceKeyOf is where l's fencing counter lives: its slot's for a permit.
func fenceKeyOf(l *Lock) string {
	if _, slot, ok := ParsePermitToken(l.Token); ok {
		return permitFenceKey(l.Key, slot)
	}
	return FenceKey(l.Key)
}

// PermitsMarker is the value a semaphore's key holds while any of its n
// permits is held.
func PermitsMarker(n int) string { return PermitsMarkerPrefix + strconv.Itoa(n) }

// ParsePermitsMarker reads the n of a PermitsMarker.
func ParsePermitsMarker(v string) (int, bool) {
	s, ok := strings.CutPrefix(v, PermitsMarkerPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1 && n <= MaxPermits
}

// PermitsMismatchError is a semaphore asked for with another n than the
// one its key holds (on a majority).
type PermitsMismatchError struct{ Asked, Held int }

func (e *PermitsMismatchError) Error() string {
	return fmt.Sprintf("PERMITS %d does not match the %d permits key holds", e.Asked, e.Held)
}

// AcquirePermit takes one of the n permits of key for ttl: a read of every
// slot on every node picks the slots free on a majority, and each of up to
// permitTries of them is tried by a grant round until one wins. It returns
// the permit (its token names its slot), ErrNotAcquired when all permits
// are held (or the key is held exclusively), a *PermitsMismatchError when
// a majority holds the key for another n, or a *NoQuorumError. With Wait
// it is retried as a blocking Acquire is.
func (c *Cluster) AcquirePermit(ctx context.Context, key string, n int, ttl time.Duration, opts ...Option) (Lock, error) {
	if o := optionsOf(opts); o.wait > 0 {
		return c.acquirePermitWait(ctx, key, n, ttl, o)
	}
	return c.acquirePermit(ctx, key, n, ttl, 0)
}

// acquirePermitWait retries AcquirePermit as a blocking Acquire is
// retried: a release of any permit of key (through any proxy) wakes the
// oldest waiter.
func (c *Cluster) acquirePermitWait(ctx context.Context, key string, n int, ttl time.Duration, o Option) (Lock, error) {
	return waitRounds(c, ctx, key, c.cfg.Now().Add(o.wait), blocking[Lock]{
		try:   func(mark time.Duration) (Lock, error) { return c.acquirePermit(ctx, key, n, ttl, mark) },
		tried: o.tried,
		marks: true,
		final: func(err error) bool { return !permitRetryable(err) },
	})
}

// permitRetryable is an acquire's failure that a later round may not have.
func permitRetryable(err error) bool {
	var mm *PermitsMismatchError
	return !errors.Is(err, ErrInvalidTTL) && !errors.As(err, &mm)
}

// acquirePermit is one AcquirePermit (AcquirePermitAsync), waited for
// until ctx is done; a permit granted after that is released.
func (c *Cluster) acquirePermit(ctx context.Context, key string, n int, ttl, mark time.Duration) (Lock, error) {
	abandon := func(o permitOutcome) {
		if o.err == nil {
			c.releaseThen(OpRelease, key, o.l.Token, ttl, true, nil, func(*round, tally) {})
		}
	}
	o, err := await(ctx, func(ch chan permitOutcome) {
		c.acquirePermitThen(key, n, ttl, mark, func(l Lock, err error) { give(ch, permitOutcome{l, err}, abandon) })
	})
	if err != nil {
		return Lock{}, err
	}
	return o.l, o.err
}

type permitOutcome struct {
	l   Lock
	err error
}

// AcquirePermitAsync is AcquirePermit without Wait that does not wait:
// done gets its outcome, once, from the goroutine of the reply that
// decided it or before AcquirePermitAsync returns. done must not block.
func (c *Cluster) AcquirePermitAsync(key string, n int, ttl time.Duration, done func(Lock, error)) {
	c.acquirePermitThen(key, n, ttl, 0, done)
}

// acquirePermitThen reads the free slots, then tries them one round
// after the other until one is granted or refused for good; mark > 0
// marks the key as waited for (see acquireWait).
func (c *Cluster) acquirePermitThen(key string, n int, ttl, mark time.Duration, done func(Lock, error)) {
	pr := &permitRun{c: c, key: key, n: n, ttl: ttl, mark: mark, done: done, report: c.begin(OpAcquire), err: ErrNotAcquired}
	if ttl <= 0 || n < 1 || n > MaxPermits {
		pr.end(Lock{}, ErrInvalidTTL)
		return
	}
	c.freeSlotsThen(key, n, mark, pr.read)
}

// permitRun is one AcquirePermit in flight.
type permitRun struct {
	c         *Cluster
	key       string
	n         int
	ttl, mark time.Duration
	done      func(Lock, error)
	report    func(err error, validity, ttl time.Duration)
	slots     []int // the free slots not tried yet
	token     string
	err       error // the last round's
}

func (pr *permitRun) read(slots []int, err error) {
	if err != nil {
		pr.end(Lock{}, err)
		return
	}
	pr.slots = slots
	pr.next()
}

// next tries the next free slot; with none left, the last refusal is
// the outcome.
func (pr *permitRun) next() {
	if len(pr.slots) == 0 {
		pr.end(Lock{}, pr.err)
		return
	}
	pr.token = NewPermitToken(pr.n, pr.slots[0])
	pr.slots = pr.slots[1:]
	pr.c.grantThen(pr.c.acquireGrant(Cmd{Kind: AcquirePermit, Key: pr.key, Token: pr.token, TTL: pr.ttl, Add: pr.mark}), pr.decided)
}

// decided ends a slot's round (a failed one released the slot wherever
// it may have landed): granted, refused for good, or on to the next
// slot.
func (pr *permitRun) decided(v time.Duration, r *round, err error) {
	if err == nil {
		pr.end(Lock{Key: pr.key, Token: pr.token, Validity: v}, nil)
		return
	}
	if !errors.Is(err, ErrNotAcquired) {
		pr.end(Lock{}, err)
		return
	}
	var held []int
	for i := range r.calls {
		if rep := r.reply(i); rep.Err == nil && !rep.OK && rep.N > 0 {
			held = append(held, int(rep.N))
		}
	}
	if m := pr.c.permitsMismatch(held, pr.n); m != nil {
		pr.end(Lock{}, m)
		return
	}
	pr.err = err
	pr.next()
}

func (pr *permitRun) end(l Lock, err error) {
	pr.report(err, l.Validity, pr.ttl)
	pr.done(l, err)
}

// permitsMismatch is the error of a semaphore of n whose key holds the marker of
// another n on a majority of the nodes; held has the n of each node whose
// marker names another n. The n named is the one most of them hold.
func (c *Cluster) permitsMismatch(held []int, n int) error {
	if len(held) < c.Quorum() {
		return nil
	}
	top := slices.MaxFunc(held, func(a, b int) int { return cmp.Compare(countHeld(held, a), countHeld(held, b)) })
	return &PermitsMismatchError{Asked: n, Held: top}
}

func countHeld(xs []int, x int) int {
	k := 0
	for _, y := range xs {
		if y == x {
			k++
		}
	}
	return k
}

// freeSlotsThen reads key's semaphore on every node and gives then the
// slots free on a majority of the nodes where a permit of n may be
// granted (the key absent or marked for n), most widely free first, at
// most permitTries of them, in a random order among equals so that
// proxies racing for the same slots spread out.
func (c *Cluster) freeSlotsThen(key string, n int, mark time.Duration, then func([]int, error)) {
	c.collectThen(OpAcquire, same(Cmd{Kind: ReadPermits, Key: key, N: int64(n), Add: mark}), anyVote, func(r *round, t tally) {
		if err := c.heard(&t); err != nil {
			then(nil, err)
			return
		}
		free := make([]int, n)
		var held []int
		for i := range r.calls {
			if rep := r.reply(i); rep.Err == nil {
				held = countFree(rep, n, free, held)
			}
		}
		if err := c.permitsMismatch(held, n); err != nil {
			then(nil, err)
			return
		}
		then(pickSlots(free, c.Quorum()), nil)
	})
}

// countFree adds one node's read to free (per slot, the nodes where it is
// free and a permit of n may be granted: the key absent or marked for n)
// and returns held with the n of the node's marker where it names
// another n.
func countFree(rep Reply, n int, free, held []int) []int {
	if m, ok := ParsePermitsMarker(rep.Token); ok && m != n {
		held = append(held, m)
	}
	if rep.Token != "" && rep.Token != PermitsMarker(n) {
		return held // nothing can be granted on this node
	}
	if rep.Value == nil || len(rep.Value.Elems) != n {
		return held
	}
	for s, e := range rep.Value.Elems {
		if e.Kind == NilValue {
			free[s]++
		}
	}
	return held
}

// pickSlots orders the slots free on at least q nodes, most free first.
func pickSlots(free []int, q int) []int {
	var slots []int
	for s, f := range free {
		if f >= q {
			slots = append(slots, s)
		}
	}
	rand.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	slices.SortStableFunc(slots, func(a, b int) int { return cmp.Compare(free[b], free[a]) })
	return slots[:min(len(slots), permitTries)]
}

// PermitsView is what the nodes say about a semaphore's slots.
type PermitsView struct {
	// Nodes holds, per node in configuration order, how many slots it
	// holds; -1 where the node did not answer.
	Nodes []int
	// Held is how many slots hold one token on a majority: the permits
	// held.
	Held int
}

// InspectPermits reads the n slots of key on every node, for LOCKINFO:
// it changes nothing.
func (c *Cluster) InspectPermits(ctx context.Context, key string, n int) PermitsView {
	done := c.begin(OpInspect)
	v := PermitsView{Nodes: make([]int, len(c.nodes))}
	r, t, err := c.collectCtx(ctx, OpInspect, same(Cmd{Kind: ReadPermits, Key: key, N: int64(n)}), anyVote)
	votes := make([]map[string]int, n)
	for i := range v.Nodes {
		rep := r.replyOr(i, err)
		if rep.Err != nil || rep.Value == nil || len(rep.Value.Elems) != n {
			v.Nodes[i] = -1
			continue
		}
		for s, e := range rep.Value.Elems {
			if e.Kind != NilValue {
				v.Nodes[i]++
				if votes[s] == nil {
					votes[s] = map[string]int{}
				}
				votes[s][e.Str]++
			}
		}
	}
	for _, tokens := range votes {
		for _, k := range tokens {
			if k >= c.Quorum() {
				v.Held++
			}
		}
	}
	if err == nil {
		err = c.heard(&t)
	}
	done(err, 0, 0)
	return v
}
