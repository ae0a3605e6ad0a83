package tracking_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/tracking"
)

// looked is a node that tells when a read of it (the Table's look for a
// NOLOOP client) has been answered and the Table has taken the reply; with
// fail set, such a read fails.
type looked struct {
	quorum.Node
	fail  atomic.Bool
	looks chan string
}

func (n *looked) Do(dl time.Time, cmd quorum.Cmd, r quorum.Receiver) {
	if cmd.Kind != quorum.Get {
		n.Node.Do(dl, cmd, r)
		return
	}
	if n.fail.Load() {
		r.Receive(quorum.Reply{Err: errors.New("node down")})
		n.looks <- cmd.Key
		return
	}
	n.Node.Do(dl, cmd, quorum.ReceiverFunc(func(rep quorum.Reply) {
		r.Receive(rep)
		n.looks <- cmd.Key
	}))
}

// waitLook waits for the next look at n, which must be of key.
func (n *looked) waitLook(t *testing.T, key string) {
	t.Helper()
	select {
	case k := <-n.looks:
		if k != key {
			t.Fatalf("%s looked at %q, want %q", n.Name(), k, key)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never looked at %q", n.Name(), key)
	}
}

// noLoopTable is a Table over three embedded nodes whose reports have
// begun (their first flush is over).
func noLoopTable(t *testing.T) (*tracking.Table, []*looked) {
	t.Helper()
	var nodes []quorum.Node
	var ls []*looked
	for _, name := range []string{"m1", "m2", "m3"} {
		m := embedded.New(name)
		t.Cleanup(func() { m.Close() })
		l := &looked{Node: m, looks: make(chan string, 64)}
		ls = append(ls, l)
		nodes = append(nodes, l)
	}
	cl, err := quorum.New(nodes, quorum.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	tb := tracking.New(cl)
	tb.Ready()
	return tb, ls
}

// on runs cmd on each node of ns, one after the other, each answered
// before the next.
func on(t *testing.T, cmd quorum.Cmd, ns ...*looked) {
	t.Helper()
	for _, n := range ns {
		if rep := quorum.Call(t.Context(), n, cmd); rep.Err != nil {
			t.Fatalf("%s: %v", n.Name(), rep.Err)
		}
	}
}

// waitTold waits until c has been told of something, and returns it.
func waitTold(t *testing.T, c *client) [][]string {
	t.Helper()
	for range 10000 {
		if got := c.take(); got != nil {
			return got
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("never told")
	return nil
}

// readThenWrite has c read key (tracked from then on) and then say that
// its own write leaves value there.
func readThenWrite(tb *tracking.Table, c *client, key, value string) {
	tb.Begin(c, []string{key})
	tb.End(c, []string{key})
	tb.Own(c, 0, []string{key}, []string{value}, false)
}

func set(key, value string) quorum.Cmd {
	return quorum.Cmd{Kind: quorum.Set, Key: key, Token: value, TTL: time.Minute}
}

// TestTableNoLoopDefault: a NOLOOP client that read a key is not told of
// the nodes' reports of its own write of it (each node, looked at after
// its report, holds what the write left), and keeps the key; a change by
// anyone else that a node then shows is told, and so is a report whose
// look fails.
func TestTableNoLoopDefault(t *testing.T) {
	tb, ns := noLoopTable(t)
	c := &client{}
	readThenWrite(tb, c, "k", "mine")
	on(t, set("k", "mine"), ns...)
	for _, n := range ns {
		n.waitLook(t, "k")
	}
	if got := c.take(); got != nil {
		t.Fatalf("told %q of its own write", got)
	}
	if !tb.Tracks(c, "k") {
		t.Fatal("the key was forgotten on a report of the client's own write")
	}

	on(t, set("k", "theirs"), ns[0])
	ns[0].waitLook(t, "k")
	if got := c.take(); !equal(got, [][]string{{"k"}}) {
		t.Fatalf("told %q of another client's write, want [[k]]", got)
	}
	if tb.Tracks(c, "k") {
		t.Fatal("the key is still tracked once told")
	}

	// After a read of its own, a client is told of every report.
	readThenWrite(tb, c, "k", "mine")
	tb.Disown(c, []string{"k"})
	on(t, set("k", "mine"), ns[2])
	if got := waitTold(t, c); !equal(got, [][]string{{"k"}}) {
		t.Fatalf("told %q after a read, want [[k]]", got)
	}

	// A look that fails tells.
	readThenWrite(tb, c, "k", "mine")
	ns[1].fail.Store(true)
	on(t, set("k", "mine"), ns[1])
	ns[1].waitLook(t, "k")
	if got := c.take(); !equal(got, [][]string{{"k"}}) {
		t.Fatalf("told %q when the look failed, want [[k]]", got)
	}
}

// TestTableNoLoopExpiry: the expiry of a key that the client's own write
// left is a change the node shows (no key), so it is told: a NOLOOP
// holder still hears that its lock ran out.
func TestTableNoLoopExpiry(t *testing.T) {
	tb, ns := noLoopTable(t)
	c := &client{}
	readThenWrite(tb, c, "lk", "mine")
	cmd := set("lk", "mine")
	cmd.TTL = 30 * time.Millisecond
	on(t, cmd, ns[0])
	ns[0].waitLook(t, "lk") // the write's report: left out
	ns[0].waitLook(t, "lk") // the expiry's
	if got := c.take(); !equal(got, [][]string{{"lk"}}) {
		t.Fatalf("told %q, want the expiry alone", got)
	}
}

// TestTableNoLoopDelete: a delete's own reports are left out where it
// says it leaves no key, told where it does not.
func TestTableNoLoopDelete(t *testing.T) {
	tb, ns := noLoopTable(t)
	watcher := &client{}
	tb.Broadcast(watcher, nil)
	on(t, set("d", "x"), ns[0], ns[1])
	for seen := 0; seen < 2; {
		seen += len(waitTold(t, watcher))
	}
	c := &client{}
	for i, absent := range []bool{true, false} {
		tb.Begin(c, []string{"d"})
		tb.End(c, []string{"d"})
		tb.Own(c, 0, []string{"d"}, []string{"x"}, absent)
		on(t, quorum.Cmd{Kind: quorum.Delete, Key: "d"}, ns[i])
		ns[i].waitLook(t, "d")
		got := c.take()
		if told := got != nil; told == absent {
			t.Errorf("delete (absent %v): told %q", absent, got)
		}
	}
}

// TestTableNoLoopBroadcast: in BCAST mode too, the client's own writes
// are left out and everything else under its prefixes is told.
func TestTableNoLoopBroadcast(t *testing.T) {
	tb, ns := noLoopTable(t)
	c := &client{}
	tb.Broadcast(c, []string{"p:"})
	tb.Own(c, 0, []string{"p:1"}, []string{"mine"}, false)
	on(t, set("p:1", "mine"), ns...)
	for _, n := range ns {
		n.waitLook(t, "p:1")
	}
	on(t, set("p:2", "mine"), ns[0]) // not its own write: told at once
	if got := waitTold(t, c); !equal(got, [][]string{{"p:2"}}) {
		t.Fatalf("told %q, want [[p:2]]", got)
	}
	on(t, set("p:1", "theirs"), ns[2])
	ns[2].waitLook(t, "p:1")
	if got := c.take(); !equal(got, [][]string{{"p:1"}}) {
		t.Fatalf("told %q of another client's write, want [[p:1]]", got)
	}
	// Turned off and on again, it remembers no write of its own.
	tb.Forget(c)
	tb.Broadcast(c, []string{"p:"})
	on(t, set("p:1", "mine"), ns[1])
	if got := waitTold(t, c); !equal(got, [][]string{{"p:1"}}) {
		t.Fatalf("told %q after Forget, want [[p:1]]", got)
	}
}
