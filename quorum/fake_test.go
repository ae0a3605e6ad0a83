package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// behavior is how a fakeNode answers a call.
type behavior int

const (
	// behaveOK performs the operation on the in-memory map.
	behaveOK behavior = iota
	// behaveErr fails with errBoom without touching the map.
	behaveErr
	// behaveStall blocks until ctx is done (a stalled node) and returns ctx.Err().
	behaveStall
	// behaveDelay waits fakeNode.delay (or until ctx is done), then acts as behaveOK.
	behaveDelay
	// behaveNo answers "no": false for every boolean op, absent for Get,
	// without touching the map (Set then drops the write and reports success).
	behaveNo
	// behaveLostReply performs the operation, then fails with errLostReply:
	// the write landed but the answer was lost on the way back.
	behaveLostReply
)

var (
	// errUnsupported answers the commands the fake does not model.
	errUnsupported = errors.New("fake: command not modelled")
	errBoom        = errors.New("boom\nsecond line")
	errLostReply   = errors.New("reply lost")
)

// Operation names, as passed to fakeNode hooks and per-op behaviours.
const (
	opSetNX   = "SetNX"
	opSet     = "Set"
	opCAD     = "CompareAndDelete"
	opCAE     = "CompareAndExtend"
	opGet     = "Get"
	opDelete  = "Delete"
	opExpire  = "Expire"
	nodeClose = "Close"
)

type entry struct {
	token string
	ttl   time.Duration // stored as given; the fake never expires keys by itself
}

// fakeNode is an in-memory Node with configurable failures. Keys never
// expire on their own: expiry is the backends' business, not the quorum's,
// and fixed ttls keep Get's arithmetic exact.
type fakeNode struct {
	name string

	mu     sync.Mutex
	cond   *sync.Cond // broadcast after every completed call
	data   map[string]entry
	def    behavior
	ops    map[string]behavior // per-operation override of def
	delay  time.Duration
	calls  map[string]int // completed calls per op
	hook   func(op, key, token string, yes bool, err error)
	closed int
}

func newFakeNode(name string) *fakeNode {
	f := &fakeNode{name: name, data: map[string]entry{}, ops: map[string]behavior{}, calls: map[string]int{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// newFakes returns n healthy fake nodes named n0..n{n-1}, and the same
// nodes as a []Node.
func newFakes(n int) ([]*fakeNode, []Node) {
	fs := make([]*fakeNode, n)
	ns := make([]Node, n)
	for i := range fs {
		fs[i] = newFakeNode(fmt.Sprintf("n%d", i))
		ns[i] = fs[i]
	}
	return fs, ns
}

func (f *fakeNode) setBehavior(b behavior) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = b
}

func (f *fakeNode) setOpBehavior(op string, b behavior) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op] = b
}

func (f *fakeNode) setDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

func (f *fakeNode) setHook(h func(op, key, token string, yes bool, err error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// put stores key=token with ttl directly, bypassing behaviours.
func (f *fakeNode) put(key, token string, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data[key] = entry{token, ttl}
}

// drop deletes key directly, as a node that lost its data.
func (f *fakeNode) drop(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.data, key)
}

// peek returns what the node stores at key.
func (f *fakeNode) peek(key string) (entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.data[key]
	return e, ok
}

func (f *fakeNode) callCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// waitCalls blocks until op has completed at least n times on the node, or
// fails the test after a generous timeout (never a timing assertion: it only
// prevents a hang).
func (f *fakeNode) waitCalls(t *testing.T, op string, n int) {
	t.Helper()
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		f.mu.Lock()
		defer f.mu.Unlock()
		for f.calls[op] < n {
			select {
			case <-stop:
				return
			default:
			}
			f.cond.Wait()
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		close(stop)
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
		<-done
		t.Fatalf("%s: %s completed %d times, want >= %d", f.name, op, f.callCount(op), n)
	}
}

// begin applies the behaviour for op before the operation. It returns
// (proceed, lostReply, err): when proceed is false the call must return err.
func (f *fakeNode) begin(ctx context.Context, op string) (proceed, no, lost bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, false, false, err
	}
	f.mu.Lock()
	b, ok := f.ops[op]
	if !ok {
		b = f.def
	}
	d := f.delay
	f.mu.Unlock()
	switch b {
	case behaveErr:
		return false, false, false, errBoom
	case behaveStall:
		<-ctx.Done()
		return false, false, false, ctx.Err()
	case behaveDelay:
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false, false, false, ctx.Err()
		}
	case behaveNo:
		return true, true, false, nil
	case behaveLostReply:
		return true, false, true, nil
	}
	return true, false, false, nil
}

// finish records a completed call (with f.mu held) and runs the hook after
// unlocking.
func (f *fakeNode) finish(op, key, token string, yes bool, err error) {
	f.calls[op]++
	h := f.hook
	f.cond.Broadcast()
	f.mu.Unlock()
	if h != nil {
		h(op, key, token, yes, err)
	}
}

// run is the shared skeleton of every boolean operation.
func (f *fakeNode) run(ctx context.Context, op, key, token string, do func() bool) (bool, error) {
	proceed, no, lost, err := f.begin(ctx, op)
	f.mu.Lock()
	if !proceed {
		f.finish(op, key, token, false, err)
		return false, err
	}
	yes := false
	if !no {
		yes = do()
	}
	if lost {
		err = errLostReply
		yes = false
	}
	f.finish(op, key, token, yes, err)
	return yes, err
}

func (f *fakeNode) Name() string { return f.name }

func (f *fakeNode) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

var _ Node = (*fakeNode)(nil)

// fakeOp is one command the fake models: the operation name that hooks,
// per-op behaviours and call counts know it by, and what it does to the
// map (f.mu held), reporting yes and filling the rest of the reply.
type fakeOp struct {
	name  string
	apply func(f *fakeNode, cmd Cmd, rep *Reply) bool
	// ok: the reply is OK whenever no error came (a Set dropped by
	// behaveNo still reports success).
	ok bool
}

// fakeOps is every command the fake runs, by kind (see also do).
var fakeOps = map[CmdKind]fakeOp{
	SetNX:            {name: opSetNX, apply: setNX},
	RestoreHeld:      {name: opSetNX, apply: setNX},
	Set:              {name: opSet, apply: set, ok: true},
	CompareAndDelete: {name: opCAD, apply: compareAndDelete},
	CompareAndExtend: {name: opCAE, apply: compareAndExtend},
	Get:              {name: opGet, apply: get},
	Delete:           {name: opDelete, apply: del},
	Expire:           {name: opExpire, apply: expire},
}

func setNX(f *fakeNode, cmd Cmd, _ *Reply) bool {
	if _, held := f.data[cmd.Key]; held {
		return false
	}
	f.data[cmd.Key] = entry{cmd.Token, cmd.TTL}
	return true
}

func set(f *fakeNode, cmd Cmd, _ *Reply) bool {
	f.data[cmd.Key] = entry{cmd.Token, cmd.TTL}
	return true
}

func compareAndDelete(f *fakeNode, cmd Cmd, _ *Reply) bool {
	if e, ok := f.data[cmd.Key]; ok && e.token == cmd.Token {
		delete(f.data, cmd.Key)
		return true
	}
	return false
}

func compareAndExtend(f *fakeNode, cmd Cmd, _ *Reply) bool {
	if e, ok := f.data[cmd.Key]; ok && e.token == cmd.Token {
		f.data[cmd.Key] = entry{cmd.Token, cmd.TTL}
		return true
	}
	return false
}

func get(f *fakeNode, cmd Cmd, rep *Reply) bool {
	e, ok := f.data[cmd.Key]
	rep.Token, rep.TTL = e.token, e.ttl
	return ok
}

func del(f *fakeNode, cmd Cmd, _ *Reply) bool {
	_, ok := f.data[cmd.Key]
	delete(f.data, cmd.Key)
	return ok
}

func expire(f *fakeNode, cmd Cmd, _ *Reply) bool {
	e, ok := f.data[cmd.Key]
	if ok {
		f.data[cmd.Key] = entry{e.token, cmd.TTL}
	}
	return ok
}

// Do implements Node. Calls whose behaviour answers at once answer before
// Do returns, on the caller's goroutine; stalled and delayed ones answer
// from a goroutine of their own, by the deadline at the latest.
func (f *fakeNode) Do(deadline time.Time, cmd Cmd, r Receiver) {
	run := func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		r.Receive(f.do(ctx, cmd))
	}
	if f.blocks(fakeOps[cmd.Kind].name) {
		go run()
		return
	}
	run()
}

func (f *fakeNode) blocks(op string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.ops[op]
	if !ok {
		b = f.def
	}
	return b == behaveStall || b == behaveDelay
}

func (f *fakeNode) do(ctx context.Context, cmd Cmd) Reply {
	switch cmd.Kind {
	case RestoreHeld:
		if cmd.N > 1 {
			return Reply{Err: errUnsupported}
		}
	case ExtendOrSetNX:
		// An extend, else a SET NX: two calls, each counted as its own.
		c := Cmd{Kind: CompareAndExtend, Key: cmd.Key, Token: cmd.Token, TTL: cmd.TTL}
		rep := f.do(ctx, c)
		rep.N = 1
		if !rep.OK && rep.Err == nil {
			c.Kind = SetNX
			rep = f.do(ctx, c)
			rep.N = 2
		}
		return rep
	}
	op, ok := fakeOps[cmd.Kind]
	if !ok {
		return Reply{Err: errUnsupported}
	}
	var rep Reply
	yes, err := f.run(ctx, op.name, cmd.Key, cmd.Token, func() bool { return op.apply(f, cmd, &rep) })
	if !yes || err != nil {
		rep = Reply{}
	}
	rep.OK, rep.Err = yes || (op.ok && err == nil), err
	if cmd.Kind == CompareAndDelete {
		// Redis's answer: 1 deleted, 0 held by another token, -1 absent.
		rep.N = 1
		if !rep.OK {
			rep.N = -1
			if _, held := f.peek(cmd.Key); held {
				rep.N = 0
			}
		}
	}
	return rep
}

// Watch implements Node: the fake cannot identify a server.
func (f *fakeNode) Watch(Watcher) bool { return false }

// fakeClock advances by step on every reading, so that an operation that
// reads the clock twice (before and after its fan-out) sees exactly step
// elapse.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newFakeClock(step time.Duration) *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), step: step}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// testConfig is a fast config for unit tests: short node timeout and retry
// delays, real clock.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.NodeTimeout = 100 * time.Millisecond
	cfg.RetryDelayMin = time.Millisecond
	cfg.RetryDelayMax = 5 * time.Millisecond
	// Retried releases would add calls that tests count; pending_test.go
	// turns them on where it tests them.
	cfg.ReleaseRetry = 0
	return cfg
}

func newCluster(t *testing.T, nodes []Node, cfg Config) *Cluster {
	t.Helper()
	c, err := New(nodes, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// holders lists the names of the nodes that store token at key.
func holders(fs []*fakeNode, key, token string) []string {
	var out []string
	for _, f := range fs {
		if e, ok := f.peek(key); ok && e.token == token {
			out = append(out, f.name)
		}
	}
	return out
}

// assertNowhere fails when any node still stores token at key.
func assertNowhere(t *testing.T, fs []*fakeNode, key, token string) {
	t.Helper()
	if h := holders(fs, key, token); len(h) > 0 {
		t.Errorf("token %q still stored at %q on %v", token, key, h)
	}
}

// assertNoQuorum checks that err is a *NoQuorumError with the given counts,
// and that its reasons name every node in failed.
func assertNoQuorum(t *testing.T, err error, answered, total int, failed ...string) *NoQuorumError {
	t.Helper()
	if !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("err = %v, want ErrNoQuorum", err)
	}
	var nq *NoQuorumError
	if !errors.As(err, &nq) {
		t.Fatalf("err = %T, want *NoQuorumError", err)
	}
	if nq.Answered != answered || nq.Total != total {
		t.Errorf("NoQuorumError = %d of %d, want %d of %d", nq.Answered, nq.Total, answered, total)
	}
	reasons := nq.Reasons()
	for _, name := range failed {
		if !containsWord(reasons, name+":") {
			t.Errorf("Reasons() = %q, does not name %s", reasons, name)
		}
	}
	if nq.Errs == nil || len(nq.Errs.Errors) != total-answered {
		t.Errorf("NoQuorumError carries %v, want %d node errors", nq.Errs, total-answered)
	}
	return nq
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i == 0 || s[i-1] == ' ') {
			return true
		}
	}
	return false
}
