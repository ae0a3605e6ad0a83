package embedded

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/nodetest"
	"github.com/redlockd/redlockd/testkit/raceflag"
)

// memHeard is a Memory node that keeps the replies it gave to Eval.
type memHeard struct {
	*Memory
	mu    sync.Mutex
	evals []quorum.Reply
}

func (h *memHeard) Do(deadline time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	h.Memory.Do(deadline, cmd, quorum.ReceiverFunc(func(rep quorum.Reply) {
		if cmd.Kind == quorum.Eval {
			h.mu.Lock()
			h.evals = append(h.evals, rep)
			h.mu.Unlock()
		}
		r.Receive(rep)
	}))
}

// heardEval returns the one Eval reply h gave.
func (h *memHeard) heardEval(t *testing.T) quorum.Reply {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.evals) != 1 {
		t.Fatalf("%s answered %d Evals, want 1: %+v", h.Name(), len(h.evals), h.evals)
	}
	return h.evals[0]
}

// memCluster is a Cluster of three in-memory nodes that keep their Eval
// replies, with the node timeout given.
func memCluster(t *testing.T, timeout time.Duration) (*quorum.Cluster, []*memHeard) {
	t.Helper()
	heard := make([]*memHeard, 3)
	nodes := make([]quorum.Node, 3)
	for i := range heard {
		m := New("embedded-" + strconv.Itoa(i+1))
		t.Cleanup(func() { _ = m.Close() })
		heard[i] = &memHeard{Memory: m}
		nodes[i] = heard[i]
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = timeout
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, heard
}

// TestMemoryLongScriptHoldsUpNoOtherNode: a script that runs on the first
// node until its deadline (it spins where the node holds the key "spin")
// holds up neither the round's launch nor the other nodes, which answer
// within the same deadline; a node that ran the script before its Do
// returned gave the other two their Eval only at that deadline, late.
func TestMemoryLongScriptHoldsUpNoOtherNode(t *testing.T) {
	// The other nodes' runs take microseconds; the margin is for a busy
	// machine, and the race detector.
	timeout := time.Second
	if raceflag.Enabled {
		timeout = 3 * time.Second
	}
	c, heard := memCluster(t, timeout)
	if r := quorum.Call(t.Context(), heard[0], quorum.Cmd{Kind: quorum.Set, Key: "spin", Token: "spin", TTL: time.Minute}); !r.OK {
		t.Fatalf("Set on the first node = %+v", r)
	}
	src := `if redis.call('get', KEYS[1]) == 'spin' then while true do end end return 1`
	res, err := c.Eval(t.Context(), nodetest.Script(src), []string{"spin"}, nil, false)
	if err != nil {
		t.Fatalf("Eval: %v (a node that runs its script before Do returns holds up the others)", err)
	}
	if res.Value.Kind != quorum.IntValue || res.Value.Int != 1 {
		t.Fatalf("Eval = %+v, want 1", res.Value)
	}
	if r := heard[0].heardEval(t); !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("the spinning node answered %+v, want its script stopped at the deadline", r)
	}
	for _, h := range heard[1:] {
		if r := h.heardEval(t); r.Err != nil || r.Value == nil || r.Value.Int != 1 {
			t.Errorf("%s answered %+v, want 1", h.Name(), r)
		}
	}
}

// TestMemoryLongEvalAnsweredByAllNodes: a script that takes a while on
// each node (about 50 ms, ten times that under the race detector) is
// answered by all three nodes within a node timeout generous enough for
// one run, as three redis-servers answer it: the nodes run it side by
// side, each within the round's deadline, not one after the other.
func TestMemoryLongEvalAnsweredByAllNodes(t *testing.T) {
	timeout := 5 * time.Second
	if raceflag.Enabled {
		// The race detector slows the interpreter about tenfold, and a
		// busy machine running other packages' tests more.
		timeout = time.Minute
	}
	c, heard := memCluster(t, timeout)
	src := `local n = 0 for i=1,700000 do n = n + i end return n`
	const sum = 700000 * 700001 / 2
	res, err := c.Eval(t.Context(), nodetest.Script(src), nil, nil, false)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	if res.Value.Kind != quorum.IntValue || res.Value.Int != sum {
		t.Fatalf("Eval = %+v, want %d", res.Value, sum)
	}
	for _, h := range heard {
		if r := h.heardEval(t); r.Err != nil || r.Value == nil || r.Value.Int != sum {
			t.Errorf("%s answered %+v, want %d", h.Name(), r, sum)
		}
	}
}

// memReplies collects the replies of commands given one after another,
// in the order they were given.
type memReplies struct {
	chans []chan quorum.Reply
}

func (rs *memReplies) do(m quorum.Node, deadline time.Time, cmd quorum.Cmd) {
	ch := make(chan quorum.Reply, 2)
	rs.chans = append(rs.chans, ch)
	m.Do(deadline, cmd, quorum.ReceiverFunc(func(r quorum.Reply) { ch <- r }))
}

// wait returns every reply, failing on a second reply to one command.
func (rs *memReplies) wait(t *testing.T) []quorum.Reply {
	t.Helper()
	out := make([]quorum.Reply, len(rs.chans))
	for i, ch := range rs.chans {
		select {
		case out[i] = <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no reply to command %d", i)
		}
	}
	for i, ch := range rs.chans {
		select {
		case r := <-ch:
			t.Fatalf("a second reply to command %d: %+v", i, r)
		default:
		}
	}
	return out
}

// memBusyLoop keeps a script busy for a while before it does its work, so
// that what is given after it comes while it runs.
const memBusyLoop = `local n = 0 for i=1,200000 do n = n + i end `

// TestMemoryLineKeepsOrder: commands given one after another run in that
// order on the node, whether a script or a native command comes first and
// however long a script runs: a release never overtakes the script that
// took the lock, a script never overtakes the release before it; and once
// the line has answered, a native command answers before Do returns again.
func TestMemoryLineKeepsOrder(t *testing.T) {
	m, _ := newTestMemory(t)
	dl := time.Now().Add(time.Minute)
	take := nodetest.EvalCmd(memBusyLoop+`return redis.call('set', KEYS[1], ARGV[1], 'PX', 60000)`, []string{memK}, "a")
	read := nodetest.EvalCmd(memBusyLoop+`return redis.call('get', KEYS[1])`, []string{memK})
	release := quorum.Cmd{Kind: quorum.CompareAndDelete, Key: memK, Token: "a"}
	var rs memReplies
	rs.do(m, dl, take)                                    // 0: the script takes the lock
	rs.do(m, dl, release)                                 // 1: released after it
	rs.do(m, dl, read)                                    // 2: finds it released
	rs.do(m, dl, memSetNX(memK, "b", time.Minute))        // 3: stored after that read
	rs.do(m, dl, read)                                    // 4: finds b
	rs.do(m, dl, quorum.Cmd{Kind: quorum.Get, Key: memK}) // 5: b still
	got := rs.wait(t)
	if r := got[0]; r.Err != nil || r.Value == nil || r.Value.Kind != quorum.StatusValue {
		t.Fatalf("the taking script = %+v, want OK", r)
	}
	if r := got[1]; !r.OK || r.N != 1 {
		t.Fatalf("the release after the script = %+v, want it deleted (N 1): it overtook the script", r)
	}
	if r := got[2]; r.Err != nil || r.Value == nil || r.Value.Kind != quorum.NilValue {
		t.Fatalf("the script after the release read %+v, want nil", r)
	}
	if r := got[3]; !r.OK {
		t.Fatalf("SetNX after the scripts = %+v, want stored", r)
	}
	if r := got[4]; r.Err != nil || r.Value == nil || r.Value.Str != "b" {
		t.Fatalf("the script after SetNX read %+v, want b", r)
	}
	if r := got[5]; !r.OK || r.Token != "b" {
		t.Fatalf("Get after it all = %+v, want b", r)
	}
	var inline *quorum.Reply
	m.Do(dl, quorum.Cmd{Kind: quorum.Get, Key: memK}, quorum.ReceiverFunc(func(r quorum.Reply) { inline = &r }))
	if inline == nil || inline.Token != "b" {
		t.Fatalf("a native command once the line answered: %+v when Do returned, want b", inline)
	}
}

// TestMemoryLineKeepsOrderConcurrently: callers on one node, each on a
// key of its own, mixing scripts and native commands without waiting for
// replies, see each of their commands run after the one before.
func TestMemoryLineKeepsOrderConcurrently(t *testing.T) {
	m, _ := newTestMemory(t)
	dl := time.Now().Add(time.Minute)
	const callers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + strconv.Itoa(c)
			var rs memReplies
			for i := range rounds {
				tok := strconv.Itoa(i)
				if i%2 == 0 {
					rs.do(m, dl, nodetest.EvalCmd(`return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 60000)`, []string{key}, tok))
				} else {
					rs.do(m, dl, memSetNX(key, tok, time.Minute))
				}
				if i%3 == 0 {
					rs.do(m, dl, nodetest.EvalCmd(luaRelease, []string{key}, tok))
				} else {
					rs.do(m, dl, quorum.Cmd{Kind: quorum.CompareAndDelete, Key: key, Token: tok})
				}
			}
			got := rs.wait(t)
			for i := 0; i < len(got); i += 2 {
				take, rel := got[i], got[i+1]
				if take.Err != nil || rel.Err != nil {
					errs <- errors.Join(take.Err, rel.Err)
					return
				}
				// A script's SET NX stores (OK) or finds the key held (nil).
				if took := take.OK && (take.Value == nil || take.Value.Kind == quorum.StatusValue); !took {
					errs <- errors.New(key + ": a take found the key held: the release before it came late")
					return
				}
				if released := rel.Value == nil && rel.N == 1 || rel.Value != nil && rel.Value.Int == 1; !released {
					errs <- errors.New(key + ": a release found nothing to delete: it overtook its take")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMemoryLineLateWaiter: a command that waits behind a script past its
// own deadline is answered late, and does not run. (The script ends at
// its deadline, after the command's: the command never finds the line
// empty before its deadline.)
func TestMemoryLineLateWaiter(t *testing.T) {
	m, _ := newTestMemory(t)
	now := time.Now()
	var rs memReplies
	rs.do(m, now.Add(300*time.Millisecond), nodetest.EvalCmd(`while true do end`, nil))
	rs.do(m, now.Add(20*time.Millisecond), memSetNX(memK, "a", time.Minute))
	got := rs.wait(t)
	if !errors.Is(got[0].Err, context.DeadlineExceeded) {
		t.Errorf("the endless script = %+v, want stopped at its deadline", got[0])
	}
	if !errors.Is(got[1].Err, context.DeadlineExceeded) || got[1].OK {
		t.Errorf("the SetNX behind it = %+v, want late", got[1])
	}
	if r := quorum.Call(t.Context(), m, quorum.Cmd{Kind: quorum.Get, Key: memK}); r.OK {
		t.Errorf("the late SetNX ran: the key holds %q", r.Token)
	}
}

// TestMemoryLineClosed: what waits in the line when the node closes is
// answered, once, and a script given after Close fails as Close says.
func TestMemoryLineClosed(t *testing.T) {
	m := New("closing")
	var rs memReplies
	rs.do(m, time.Now().Add(100*time.Millisecond), nodetest.EvalCmd(`while true do end`, nil))
	rs.do(m, time.Time{}, memSetNX(memK, "a", time.Minute))
	rs.do(m, time.Time{}, nodetest.EvalCmd(`return 1`, nil))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rs.wait(t)
	if r := quorum.Call(t.Context(), m, nodetest.EvalCmd(`return 1`, nil)); !errors.Is(r.Err, backend.ErrClosed) {
		t.Errorf("a script after Close = %+v, want %v", r, backend.ErrClosed)
	}
}
