package quorum

import (
	"testing"
	"time"
)

// timeReporter keeps a report's duration and its calls' latencies.
type timeReporter struct {
	d     time.Duration
	calls []time.Duration
}

func (r *timeReporter) RoundDone(rep *Report) {
	r.d = rep.D
	r.calls = r.calls[:0]
	for _, c := range rep.Calls {
		r.calls = append(r.calls, c.D)
	}
}

// A round decided by a reply, with no validity computed, lasted until the
// last reply it counted was read: its report's duration is that call's
// latency, taken with no clock reading of its own.
func TestReportTimedToTheDecidingReply(t *testing.T) {
	nodes := []Node{keyedNode{yesNode{"a"}}, keyedNode{yesNode{"b"}}, keyedNode{yesNode{"c"}}}
	c := newCluster(t, nodes, testConfig())
	for _, tc := range []struct {
		name string
		run  func(rp Reporter, done func())
	}{
		{"refused acquire", func(rp Reporter, done func()) {
			c.AcquireAsync(rp, SetNX, "no-k", "t", time.Second, func(Lock, error) { done() })
		}},
		{"release", func(rp Reporter, done func()) {
			c.ReleaseAsync(rp, "k", "t", func(bool, error) { done() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &timeReporter{}
			done := make(chan struct{})
			tc.run(rp, func() { close(done) })
			<-done
			if len(rp.calls) == 0 {
				t.Fatal("no calls reported")
			}
			var last time.Duration
			for _, d := range rp.calls {
				last = max(last, d)
			}
			if last <= 0 || rp.d != last {
				t.Errorf("report's duration %v, calls' %v: want the longest call's", rp.d, rp.calls)
			}
		})
	}
}
