package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/check"
	"github.com/redlockd/redlockd/testkit/faultnode"
	"github.com/redlockd/redlockd/testkit/nodetest"
)

const permitTTL = 10 * time.Second

var errPermitCut = errors.New("cut off")

// naiveSemaphore is a semaphore that counts its holders on each node and
// grants on a majority of nodes under the limit: the shape of a per-node
// count (redis-semaphore's RedlockSemaphore), kept here only to show that
// the history checker catches what it allows.
type naiveSemaphore struct {
	counts []int
	limit  int
}

// acquire counts one holder on each node of reach that is under the
// limit; granted when a majority of all nodes did.
func (s *naiveSemaphore) acquire(reach []int) bool {
	yes := 0
	for _, i := range reach {
		if s.counts[i] < s.limit {
			s.counts[i]++
			yes++
		}
	}
	return yes > len(s.counts)/2
}

// counterExample is who reaches which nodes: each client a different
// majority of three, so that no node sees more than two of them.
var counterExample = []struct {
	client string
	reach  []int
}{{"A", []int{0, 1}}, {"B", []int{1, 2}}, {"C", []int{0, 2}}}

// recordPermitHolds records, for each client granted, a section that lasts
// until the end of the test: every grant is held at once.
func recordPermitHolds(granted []string) []check.Section {
	r := check.NewRecorder()
	t0 := time.Now()
	var holds []*check.Hold
	for i, c := range granted {
		start := t0.Add(time.Duration(i) * time.Millisecond)
		holds = append(holds, r.BeginKind(c, "k", check.Exclusive, start, start, time.Hour))
	}
	end := t0.Add(time.Minute)
	for _, h := range holds {
		h.EndAt(end)
	}
	return r.Sections()
}

func limitTwo(string) int { return 2 }

// The negative control: a per-node count with a majority vote lets three
// hold a 2-permit semaphore, and the checker says so.
func TestPermitsNaiveCountCrowds(t *testing.T) {
	s := &naiveSemaphore{counts: make([]int, 3), limit: 2}
	var granted []string
	for _, c := range counterExample {
		if s.acquire(c.reach) {
			granted = append(granted, c.client)
		}
	}
	if len(granted) != 3 {
		t.Fatalf("the naive count granted %v, want all three", granted)
	}
	if crowds := check.Crowds(recordPermitHolds(granted), limitTwo); len(crowds) == 0 {
		t.Fatal("the checker saw no crowd in three holders of two permits")
	}
}

// permitCluster is three engines behind faultnodes, closed at cleanup;
// a node is cut off by SetFault(errPermitCut), which fails its commands
// without running them.
func permitCluster(t *testing.T) (*quorum.Cluster, []*faultnode.Node) {
	t.Helper()
	var fs []*faultnode.Node
	var nodes []quorum.Node
	for i := range 3 {
		f := faultnode.Wrap(embedded.New(fmt.Sprintf("m%d", i+1)))
		fs = append(fs, f)
		nodes = append(nodes, f)
	}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond
	cfg.ReleaseRetry = 0
	cfg.RetryDelayMin, cfg.RetryDelayMax = time.Millisecond, 2*time.Millisecond
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for _, f := range fs {
			f.Close()
		}
	})
	return c, fs
}

// cutOff cuts f off (its commands fail without running) or mends it.
func cutOff(f *faultnode.Node, cut bool) {
	if cut {
		f.SetFault(errPermitCut)
		return
	}
	f.SetFault(nil)
}

// The same schedule against PERMITS: each client reaches only its two
// nodes, and the third is refused, since no slot is free on a majority
// of what it can reach.
func TestPermitsCounterExampleBounded(t *testing.T) {
	c, nodes := permitCluster(t)
	var granted []string
	for _, ce := range counterExample {
		for i, n := range nodes {
			cutOff(n, i != ce.reach[0] && i != ce.reach[1])
		}
		_, err := c.AcquirePermit(context.Background(), "k", 2, permitTTL)
		switch {
		case err == nil:
			granted = append(granted, ce.client)
		case !errors.Is(err, quorum.ErrNotAcquired):
			t.Fatalf("%s: %v", ce.client, err)
		}
	}
	if len(granted) != 2 {
		t.Fatalf("granted %v, want two of the three", granted)
	}
	if crowds := check.Crowds(recordPermitHolds(granted), limitTwo); len(crowds) != 0 {
		t.Fatalf("crowds: %v", crowds)
	}
}

func TestPermitsLimitReleaseRenew(t *testing.T) {
	c, _ := permitCluster(t)
	ctx := context.Background()
	a, err := c.AcquirePermit(ctx, "k", 2, permitTTL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.AcquirePermit(ctx, "k", 2, permitTTL)
	if err != nil {
		t.Fatal(err)
	}
	_, sa, _ := quorum.ParsePermitToken(a.Token)
	_, sb, _ := quorum.ParsePermitToken(b.Token)
	if sa == sb {
		t.Fatalf("two permits on slot %d", sa)
	}
	if _, err := c.AcquirePermit(ctx, "k", 2, permitTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("a third permit of two: %v, want ErrNotAcquired", err)
	}
	if _, err := c.Acquire(ctx, "k", "x", permitTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("an exclusive lock while permits are held: %v, want ErrNotAcquired", err)
	}
	if v, err := c.Renew(ctx, "k", a.Token, 2*permitTTL); err != nil || v <= permitTTL {
		t.Fatalf("Renew = %v, %v", v, err)
	}
	if ok, err := c.Release(ctx, "k", a.Token); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if _, err := c.Renew(ctx, "k", a.Token, permitTTL); !errors.Is(err, quorum.ErrNotHeld) {
		t.Fatalf("Renew of a released permit: %v, want ErrNotHeld", err)
	}
	if _, err := c.AcquirePermit(ctx, "k", 2, permitTTL); err != nil {
		t.Fatalf("a permit after a release: %v", err)
	}
}

func TestPermitsMismatchAndExclusive(t *testing.T) {
	c, _ := permitCluster(t)
	ctx := context.Background()
	if _, err := c.AcquirePermit(ctx, "k", 2, permitTTL); err != nil {
		t.Fatal(err)
	}
	_, err := c.AcquirePermit(ctx, "k", 3, permitTTL)
	var mm *quorum.PermitsMismatchError
	if !errors.As(err, &mm) || mm.Asked != 3 || mm.Held != 2 {
		t.Fatalf("PERMITS 3 on a key of 2: %v", err)
	}
	if _, err := c.Acquire(ctx, "x", "tok", permitTTL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquirePermit(ctx, "x", 3, permitTTL); !errors.Is(err, quorum.ErrNotAcquired) {
		t.Fatalf("a permit of a key held exclusively: %v, want ErrNotAcquired", err)
	}
}

// A round granted on one node, landed unseen on another and refused on
// the third leaves no slot and no marker anywhere.
func TestPermitsFailedRoundLeavesNothing(t *testing.T) {
	mems := []*embedded.Memory{embedded.New("m1"), embedded.New("m2"), embedded.New("m3")}
	counted := []*faultnode.Node{faultnode.Wrap(mems[0]), faultnode.Wrap(mems[1]), faultnode.Wrap(mems[2])}
	// m2 runs AcquirePermit but loses the reply, as a timeout does; m3
	// answers it with an error without running it.
	counted[1].SetOpFault("AcquirePermit", faultnode.ReplyLost(errPermitCut))
	counted[2].SetOpFault("AcquirePermit", errPermitCut)
	nodes := []quorum.Node{counted[0], counted[1], counted[2]}
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond
	c, err := quorum.New(nodes, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		for _, m := range mems {
			m.Close()
		}
	}()
	ctx := context.Background()
	if _, err := c.AcquirePermit(ctx, "k", 2, permitTTL); err == nil {
		t.Fatal("a permit granted on one node of three")
	}
	if counted[0].Calls("AcquirePermit") == 0 || counted[1].Calls("AcquirePermit") == 0 {
		t.Fatal("the rounds did not reach the nodes")
	}
	for _, m := range mems {
		for _, k := range []string{"k", quorum.PermitSlotKey("k", 0), quorum.PermitSlotKey("k", 1)} {
			if tok, _, ok, err := nodetest.Get(ctx, m, k); ok || err != nil {
				t.Errorf("%s keeps %s = %q (%v)", m.Name(), k, tok, err)
			}
		}
	}
}

// A permit token that a client chose for a plain lock is released and
// renewed as that plain lock.
func TestPermitShapedPlainToken(t *testing.T) {
	c, _ := permitCluster(t)
	ctx := context.Background()
	tok := quorum.NewPermitToken(2, 0)
	if _, err := c.Acquire(ctx, "k", tok, permitTTL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(ctx, "k", tok, permitTTL); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if ok, err := c.Release(ctx, "k", tok); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
}

// A release that a node missed is sent again, to the permit's slot, once
// the node answers.
func TestPermitReleaseRetried(t *testing.T) {
	mems := []*embedded.Memory{embedded.New("m1"), embedded.New("m2"), embedded.New("m3")}
	cut := faultnode.Wrap(mems[2])
	cfg := quorum.DefaultConfig()
	cfg.NodeTimeout = 500 * time.Millisecond
	cfg.ReleaseRetry = 5 * time.Millisecond
	c, err := quorum.New([]quorum.Node{mems[0], mems[1], cut}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		for _, m := range mems {
			m.Close()
		}
	}()
	ctx := context.Background()
	l, err := c.AcquirePermit(ctx, "k", 2, time.Minute) // outlives the polls below
	if err != nil {
		t.Fatal(err)
	}
	cutOff(cut, true)
	if ok, err := c.Release(ctx, "k", l.Token); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	_, slot, _ := quorum.ParsePermitToken(l.Token)
	sk := quorum.PermitSlotKey("k", slot)
	if _, _, ok, err := nodetest.Get(ctx, mems[2], sk); err != nil || !ok {
		t.Fatalf("the cut node lost the slot without a release (read: %v)", err)
	}
	cutOff(cut, false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, slotLeft, _ := nodetest.Get(ctx, mems[2], sk)
		_, _, markerLeft, _ := nodetest.Get(ctx, mems[2], "k")
		if !slotLeft && !markerLeft {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the missed release was not retried on the slot")
		}
		time.Sleep(5 * time.Millisecond) // polling the node
	}
}

// A WAIT for a permit of another n than the key's is refused at once: the
// n will not change while permits are held.
func TestPermitWaitMismatchAtOnce(t *testing.T) {
	c, _ := permitCluster(t)
	ctx := context.Background()
	if _, err := c.AcquirePermit(ctx, "k", 2, permitTTL); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := c.AcquirePermit(wctx, "k", 3, permitTTL, quorum.Wait(time.Hour))
	var mm *quorum.PermitsMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("AcquirePermitWait of another n = %v, want a mismatch", err)
	}
	if wctx.Err() != nil {
		t.Fatal("the mismatch waited for the context")
	}
}
