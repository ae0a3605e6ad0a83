package tracking_test

import (
	"testing"

	"github.com/redlockd/redlockd/quorum"
)

// inDB is cmd in database db.
func inDB(cmd quorum.Cmd, db int) quorum.Cmd {
	cmd.DB = db
	return cmd
}

// TestTableNoLoopOtherDB: a node's report does not say in which database
// the key changed, and Redis's tracking ignores it: another client's write
// of the key in another database is told to a NOLOOP client, though the
// database of the client's own write, which the look reads, still shows
// that write. Each node's own report is left out; the next one of that
// node is told. A new own write leaves out its own report again.
func TestTableNoLoopOtherDB(t *testing.T) {
	for _, bcast := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "bcast"}[bcast]
		t.Run(name, func(t *testing.T) {
			tb, ns := noLoopTable(t)
			c := &client{}
			own := func() {
				if bcast {
					tb.Own(c, 0, []string{"k"}, []string{"mine"}, false)
				} else {
					readThenWrite(tb, c, "k", "mine")
				}
			}
			if bcast {
				tb.Broadcast(c, nil)
			}
			own()
			on(t, set("k", "mine"), ns...)
			for _, n := range ns {
				n.waitLook(t, "k")
			}
			if got := c.take(); got != nil {
				t.Fatalf("told %q of its own write", got)
			}
			// Another client writes k in db 1: db 0, where the look
			// reads, still holds the client's own value.
			on(t, inDB(set("k", "theirs"), 1), ns[1])
			ns[1].waitLook(t, "k")
			if got := c.take(); !equal(got, [][]string{{"k"}}) {
				t.Fatalf("told %q of another client's write in db 1, want [[k]]", got)
			}

			// Its own write again: left out again, on every node,
			// including the one that told the other client's write.
			own()
			on(t, set("k", "mine"), ns...)
			for _, n := range ns {
				n.waitLook(t, "k")
			}
			if got := c.take(); got != nil {
				t.Fatalf("told %q of its second own write", got)
			}
			// (In the default mode a key told is forgotten, as Redis
			// forgets it: one node's report is all it hears.)
			theirs := ns
			want := [][]string{{"k"}, {"k"}, {"k"}}
			if !bcast {
				theirs, want = ns[2:], want[:1]
			}
			on(t, inDB(set("k", "theirs"), 2), theirs...)
			for _, n := range theirs {
				n.waitLook(t, "k")
			}
			if got := c.take(); !equal(got, want) {
				t.Fatalf("told %q of another client's write in db 2, want %q", got, want)
			}
		})
	}
}
