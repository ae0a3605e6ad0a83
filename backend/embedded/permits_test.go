package embedded

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/redistest"
)

// permitStep is one command of a semaphore's life and what both nodes
// must answer.
type permitStep struct {
	name string
	cmd  quorum.Cmd
	want quorum.Reply // OK, N and Token; Value compared as text
	// slots is the Value of a ReadPermits, as text.
	slots string
	// marker is what k holds afterwards ("" absent), and markerOver a
	// ttl it must exceed.
	marker     string
	markerOver time.Duration
}

func permitSteps() []permitStep {
	a, b, d := quorum.NewPermitToken(2, 0), quorum.NewPermitToken(2, 0), quorum.NewPermitToken(2, 1)
	c3 := quorum.NewPermitToken(3, 1)
	plain := quorum.NewPermitToken(2, 1) // a plain lock's token of a permit's form
	m2 := quorum.PermitsMarker(2)
	acq := func(tok string, ttl time.Duration) quorum.Cmd {
		return quorum.Cmd{Kind: quorum.AcquirePermit, Key: "k", Token: tok, TTL: ttl}
	}
	read := quorum.Cmd{Kind: quorum.ReadPermits, Key: "k", N: 2}
	return []permitStep{
		{name: "read empty", cmd: read, want: quorum.Reply{OK: true}, slots: "[<nil> <nil>]"},
		{name: "acquire slot 0", cmd: acq(a, 5*time.Second), want: quorum.Reply{OK: true}, marker: m2, markerOver: 4 * time.Second},
		{name: "slot 0 taken", cmd: acq(b, 5*time.Second), marker: m2},
		{name: "another n", cmd: acq(c3, 5*time.Second), want: quorum.Reply{N: 2}, marker: m2},
		{name: "read held", cmd: read, want: quorum.Reply{OK: true, Token: m2}, slots: fmt.Sprintf("[%s <nil>]", a), marker: m2},
		{name: "extend raises the marker", cmd: quorum.Cmd{Kind: quorum.ExtendPermit, Key: "k", Token: a, TTL: 20 * time.Second},
			want: quorum.Reply{OK: true, N: 1}, marker: m2, markerOver: 19 * time.Second},
		{name: "a shorter permit keeps it", cmd: acq(d, time.Second), want: quorum.Reply{OK: true}, marker: m2, markerOver: 19 * time.Second},
		{name: "release fits the marker", cmd: quorum.Cmd{Kind: quorum.ReleasePermit, Key: "k", Token: a},
			want: quorum.Reply{OK: true, N: 1}, marker: m2},
		{name: "release again", cmd: quorum.Cmd{Kind: quorum.ReleasePermit, Key: "k", Token: a}, marker: m2},
		{name: "last release deletes it", cmd: quorum.Cmd{Kind: quorum.ReleasePermit, Key: "k", Token: d}, want: quorum.Reply{OK: true, N: 1}},
		{name: "release absent", cmd: quorum.Cmd{Kind: quorum.ReleasePermit, Key: "k", Token: d}, want: quorum.Reply{N: -1}},
		{name: "plain lock", cmd: quorum.Cmd{Kind: quorum.SetNX, Key: "k", Token: plain, TTL: 5 * time.Second}, want: quorum.Reply{OK: true}, marker: plain},
		{name: "no permit beside it", cmd: acq(a, 5*time.Second), marker: plain},
		{name: "plain lock extended", cmd: quorum.Cmd{Kind: quorum.ExtendPermit, Key: "k", Token: plain, TTL: 30 * time.Second},
			want: quorum.Reply{OK: true, N: 1}, marker: plain, markerOver: 29 * time.Second},
		{name: "plain lock released", cmd: quorum.Cmd{Kind: quorum.ReleasePermit, Key: "k", Token: plain}, want: quorum.Reply{OK: true, N: 1}},
	}
}

// The Redis node's scripts and the in-memory node answer every step of a
// semaphore's life alike and leave the key alike.
func TestPermitCommandsBothNodes(t *testing.T) {
	srv := redistest.Start(t)
	nodes := []quorum.Node{newTestRedis(t, srv.Addr()), New("mem")}
	t.Cleanup(func() { nodes[1].Close() })
	steps := permitSteps()
	for _, n := range nodes {
		for _, st := range steps {
			got := quorum.Call(t.Context(), n, st.cmd)
			if got.Err != nil {
				t.Fatalf("%s: %s: %v", n.Name(), st.name, got.Err)
			}
			if got.OK != st.want.OK || got.N != st.want.N || got.Token != st.want.Token {
				t.Fatalf("%s: %s: got OK %v N %d Token %q, want %+v", n.Name(), st.name, got.OK, got.N, got.Token, st.want)
			}
			if st.cmd.Kind == quorum.ReadPermits {
				if s := permitValueText(got.Value); s != st.slots {
					t.Fatalf("%s: %s: slots %s, want %s", n.Name(), st.name, s, st.slots)
				}
			}
			checkPermitMarker(t, n, st)
		}
	}
}

func checkPermitMarker(t *testing.T, n quorum.Node, st permitStep) {
	t.Helper()
	rep := quorum.Call(t.Context(), n, quorum.Cmd{Kind: quorum.Get, Key: "k"})
	switch {
	case rep.Err != nil:
		t.Fatal(rep.Err)
	case rep.Token != st.marker || (st.marker != "") != rep.OK:
		t.Fatalf("%s: after %s, k holds %q (%v), want %q", n.Name(), st.name, rep.Token, rep.OK, st.marker)
	case st.markerOver > 0 && rep.TTL <= st.markerOver:
		t.Fatalf("%s: after %s, k's ttl is %v, want over %v", n.Name(), st.name, rep.TTL, st.markerOver)
	case st.name == "release fits the marker" && rep.TTL > time.Second:
		t.Fatalf("%s: the marker outlives the last slot: %v", n.Name(), rep.TTL)
	}
}

func permitValueText(v *quorum.Value) string {
	if v == nil {
		return "<no value>"
	}
	s := "["
	for i, e := range v.Elems {
		if i > 0 {
			s += " "
		}
		if e.Kind == quorum.NilValue {
			s += "<nil>"
		} else {
			s += e.Str
		}
	}
	return s + "]"
}
