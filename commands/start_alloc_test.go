package commands

import (
	"fmt"
	"testing"
	"time"

	"github.com/redlockd/redlockd/backend/embedded"
	"github.com/redlockd/redlockd/quorum"
	"github.com/redlockd/redlockd/testkit/raceflag"
)

// replyWriter keeps the kind of the first reply written (and an
// integer reply's value), allocating nothing; the replies of the started
// lock commands are all it writes.
type replyWriter struct {
	Writer // nil: a reply of another kind fails the test
	first  string
	n      int64
}

func (w *replyWriter) note(kind string) {
	if w.first == "" {
		w.first = kind
	}
}

func (w *replyWriter) WriteSimple(s string) {
	if s == "OK" {
		w.note("+OK")
	} else {
		w.note("+")
	}
}
func (w *replyWriter) WriteInt(n int64)       { w.note(":"); w.n = n }
func (w *replyWriter) WriteArray(int)         { w.note("*") }
func (w *replyWriter) WriteBulkString(string) { w.note("$") }
func (w *replyWriter) WriteBulk([]byte)       { w.note("$") }
func (w *replyWriter) WriteError(string)      { w.note("-") }
func (w *replyWriter) WriteNull()             { w.note("nil") }

func (nopCommandObserver) CommandDone(string, string, time.Duration, *quorum.Report) {}

// nopCommandObserver stands for the metrics, which production runs
// with: each started command then carries its report.
type nopCommandObserver struct{}

// The lock requests that Start runs allocate nothing in this package,
// an Observer's report included: the command's record, its
// continuations and the report of its round are pooled, and the key and
// token their round keeps share their connection's chunk (keptStrings).
// The quorum's and the nodes' own allocations, measured by calling the
// cluster's async operations directly, are taken out.
func TestStartAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	for _, tc := range []struct {
		name   string
		reqs   [][]string
		budget float64 // per pair
	}{
		{"SET NX PX then EVALSHA release", [][]string{
			{"SET", "key:1", "token:1", "NX", "PX", "10000"},
			{"EVALSHA", sha1Hex(cadScript), "1", "key:1", "token:1"},
		}, 0},
		{"LOCK then UNLOCK", [][]string{
			{"LOCK", "key:1", "10000", "TOKEN", "token:1"},
			{"UNLOCK", "key:1", "token:1"},
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []quorum.Node
			for i := range 3 {
				nodes = append(nodes, embedded.New(fmt.Sprintf("mem-%d", i+1)))
			}
			cl, err := quorum.New(nodes, calmConfig())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Close() })
			h := New(cl, Options{Observer: nopCommandObserver{}})
			s := h.NewSession("127.0.0.1:1")
			t.Cleanup(func() { h.CloseSession(s) })
			var reqs [][][]byte
			for _, words := range tc.reqs {
				reqs = append(reqs, byteArgs(words))
			}
			var w replyWriter
			ended := 0
			done := func() { ended++ }
			wants := []string{"+OK", ":"}
			if tc.reqs[0][0] == "LOCK" {
				wants[0] = "*"
			}
			pair := func() {
				for i, args := range reqs {
					w = replyWriter{}
					if !h.Start(s, NewRequest(args), &w, done) {
						t.Fatalf("%s has no asynchronous form", args[0])
					}
					if w.first != wants[i] || (w.first == ":" && w.n != 1) {
						t.Fatalf("%s replied %q %d, want %q", args[0], w.first, w.n, wants[i])
					}
				}
			}
			pair() // the session's maps and the pools fill once
			proxied := testing.AllocsPerRun(200, pair)
			key, token := "key:1", "token:1"
			acquired := func(quorum.Lock, error) {}
			released := func(bool, error) {}
			direct := testing.AllocsPerRun(200, func() {
				cl.AcquireAsync(nil, quorum.SetNX, key, token, 10*time.Second, acquired)
				cl.ReleaseAsync(nil, key, token, released)
			})
			own := proxied - direct
			t.Logf("%.1f allocations per pair started, %.1f in the quorum and nodes: %.1f in commands", proxied, direct, own)
			if own > tc.budget {
				t.Errorf("commands allocates %.1f times per pair started, budget %.0f", own, tc.budget)
			}
			if ended != 2*202 { // AllocsPerRun runs pair once more first
				t.Errorf("done called %d times, want %d", ended, 2*202)
			}
			// Every allocation counted, not an average rounded down: over
			// many pairs, commands may allocate no more than the chunks
			// its keys and tokens fill (keptStrings), and a little the
			// nodes' own housekeeping varies by between two runs.
			const runs = 2000
			pm := mallocs(runs, pair)
			dm := mallocs(runs, func() {
				cl.AcquireAsync(nil, quorum.SetNX, key, token, 10*time.Second, acquired)
				cl.ReleaseAsync(nil, key, token, released)
			})
			chunks := runs * 2 * (len(key) + len(token)) / keptChunk
			t.Logf("%d pairs started: %d allocations, %d in the quorum and nodes; %d chunks' worth", runs, pm, dm, chunks)
			if slack := uint64(chunks + runs/20); pm > dm+slack {
				t.Errorf("%d pairs started allocate %d times in commands, over the %d chunks they fill and %d of the nodes' slack", runs, pm-dm, chunks, runs/20)
			}
		})
	}
}
