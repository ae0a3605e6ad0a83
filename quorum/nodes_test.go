package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

// The unit tests' nodes are embedded engines, which run the scripts a
// Redis node runs, each wrapped in a faultnode that fails, holds up,
// counts and watches its commands.

var (
	errBoom = errors.New("boom\nsecond line")
	errLost = errors.New("reply lost")
)

// Command names, as faultnode counts and faults them.
const (
	opSetNX  = "SetNX"
	opCAD    = "CompareAndDelete"
	opCAE    = "CompareAndExtend"
	opDelete = "Delete"
	opExpire = "Expire"
)

// stall is a delay that outlasts every node call's deadline: a node held
// up by it never answers in time.
const stall = time.Hour

// newNodes returns n fresh nodes named n0..n{n-1}, and the same nodes as
// a []quorum.Node.
func newNodes(n int) ([]*faultnode.Node, []quorum.Node) {
	fs := make([]*faultnode.Node, n)
	ns := make([]quorum.Node, n)
	for i := range fs {
		fs[i] = faultnode.Wrap(embedded.New(fmt.Sprintf("n%d", i)))
		ns[i] = fs[i]
	}
	return fs, ns
}

// testConfig is the fast config of the package's unit tests.
func testConfig() quorum.Config { return quorum.UnitConfig() }

func newCluster(t *testing.T, nodes []quorum.Node, cfg quorum.Config) *quorum.Cluster {
	t.Helper()
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// stepClock advances by step on every reading, so that an operation that
// reads the clock twice (before and after its fan-out) sees exactly step
// elapse. It times the cluster only: the nodes keep real time.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newStepClock(step time.Duration) *stepClock {
	return &stepClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), step: step}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// put stores key=token with ttl on f's engine, past its faults; a ttl of
// -1 stores it without expiry.
func put(t testing.TB, f *faultnode.Node, key, token string, ttl time.Duration) {
	t.Helper()
	var err error
	if ttl == -1 {
		err = quorum.Call(context.Background(), f.Node, nodetest.EvalCmd("return redis.call('SET', KEYS[1], ARGV[1])", []string{key}, token)).Err
	} else {
		err = nodetest.Set(context.Background(), f.Node, key, token, ttl)
	}
	if err != nil {
		t.Errorf("%s: storing %s=%s: %v", f.Name(), key, token, err)
	}
}

// drop deletes key from f's engine, as a node that lost its data.
func drop(t testing.TB, f *faultnode.Node, key string) {
	t.Helper()
	if _, err := nodetest.Delete(context.Background(), f.Node, key, false); err != nil {
		t.Fatalf("%s: deleting %s: %v", f.Name(), key, err)
	}
}

// stored is what a node's engine holds at a key: its token, its remaining
// ttl (-1: no expiry), and whether it holds the key at all.
type stored struct {
	token string
	ttl   time.Duration
	ok    bool
}

// peek reads what f's engine stores at key, past its faults.
func peek(t testing.TB, f *faultnode.Node, key string) stored {
	t.Helper()
	tok, ttl, ok, err := nodetest.Get(context.Background(), f.Node, key)
	if err != nil {
		t.Fatalf("%s: reading %s: %v", f.Name(), key, err)
	}
	return stored{tok, ttl, ok}
}

// assertTTL checks a ttl read back from a node against the ttl last set,
// want: the node's clock runs, so it may have gone down since, by less
// than half of want. Tests keep the ttls they tell apart far enough apart
// (and long enough) for that bound never to meet a slow machine.
func assertTTL(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got > want || got <= want/2 {
		t.Errorf("%s: ttl %v, want %v (less the little time since it was set)", what, got, want)
	}
}

// holders lists the names of the nodes that store token at key.
func holders(t testing.TB, fs []*faultnode.Node, key, token string) []string {
	t.Helper()
	var out []string
	for _, f := range fs {
		if s := peek(t, f, key); s.ok && s.token == token {
			out = append(out, f.Name())
		}
	}
	return out
}

// assertNowhere fails when any node still stores token at key.
func assertNowhere(t *testing.T, fs []*faultnode.Node, key, token string) {
	t.Helper()
	if h := holders(t, fs, key, token); len(h) > 0 {
		t.Errorf("token %q still stored at %q on %v", token, key, h)
	}
}

// waitAll waits until op has been answered n times on every node, so that
// the calls an early-returning operation left behind have done their work.
func waitAll(t *testing.T, fs []*faultnode.Node, op string, n int) {
	t.Helper()
	for _, f := range fs {
		f.WaitAnswered(t, op, n)
	}
}

func names(fs []*faultnode.Node) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name()
	}
	return out
}

// assertNoQuorum checks that err is a *NoQuorumError with the given counts,
// and that its reasons name every node in failed.
func assertNoQuorum(t *testing.T, err error, answered, total int, failed ...string) *quorum.NoQuorumError {
	t.Helper()
	if !errors.Is(err, quorum.ErrNoQuorum) {
		t.Fatalf("err = %v, want ErrNoQuorum", err)
	}
	var nq *quorum.NoQuorumError
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
		if strings.HasPrefix(s[i:], w) && (i == 0 || s[i-1] == ' ') {
			return true
		}
	}
	return false
}

// waitFor polls an external condition until it holds; the deadline only
// prevents a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
