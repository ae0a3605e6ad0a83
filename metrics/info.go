package metrics

import (
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/redlockd/redlockd/quorum"
)

// BackendFields returns the extra ",key=value" fields of node's line in
// INFO backends: what the last call found, calls, errors, mean latency
// and the last error.
func (m *Metrics) BackendFields(node string) string {
	n := m.node(node)
	// calls before busy: NodesDone adds the time first, so every call
	// counted here has its time in busy.
	calls, errs := n.calls.Load(), n.errors.Load()
	busy := time.Duration(n.busy.Load())
	n.mu.Lock()
	defer n.mu.Unlock()
	var avg time.Duration
	if calls > 0 {
		avg = busy / time.Duration(calls)
	}
	// "link" is what the last call found; INFO's own state field comes
	// from the cluster's periodic look at the server.
	s := fmt.Sprintf(",link=%s,link_since_s=%d,calls=%d,errors=%d,avg_latency_us=%d",
		n.state(), int64(time.Since(n.since).Seconds()), calls, errs, avg.Microseconds())
	if n.lastErr != "" {
		// INFO's field separators must not appear inside a value.
		s += ",last_call_error=" + strings.NewReplacer(",", ";", "\r", "", "\n", "").Replace(n.lastErr)
	}
	return s
}

// InfoSections names the sections WriteInfo adds to INFO.
func (m *Metrics) InfoSections() []string { return []string{"locks"} }

// WriteInfo writes section's "field:value" lines in INFO's format: the
// lock counters of "stats", and the whole of "locks". Both are read from
// the quorum operations' counters that /metrics serves.
func (m *Metrics) WriteInfo(section string, b *strings.Builder) {
	switch section {
	case "stats":
		m.writeLockCounters(b)
	case "locks":
		m.writeLocks(b)
	}
}

// lockCounters are INFO stats' lock fields: each sums the quorum
// operations' outcomes it names.
var lockCounters = []struct {
	field, outcome string
	ops            []string
}{
	{"locks_acquired", quorum.OutcomeOK, grantOps},
	{"locks_extended", quorum.OutcomeOK, []string{quorum.OpExtend}},
	{"locks_contended", quorum.OutcomeContended, lockOps},
	{"locks_noquorum", quorum.OutcomeNoQuorum, lockOps},
	{"locks_released", quorum.OutcomeOK, []string{quorum.OpRelease}},
}

var (
	// grantOps are the operations that hand a lock to a token.
	grantOps = []string{quorum.OpAcquire, quorum.OpReenter, quorum.OpForceSet, quorum.OpHandOver}
	// lockOps are those and the extends: what a client's lock asked for.
	lockOps = append(append([]string(nil), grantOps...), quorum.OpExtend)
)

func (m *Metrics) writeLockCounters(b *strings.Builder) {
	for _, lc := range lockCounters {
		var n int64
		for _, op := range lc.ops {
			n += m.opCount(op, lc.outcome)
		}
		fmt.Fprintf(b, "%s:%d\r\n", lc.field, n)
	}
}

// opCount is how many op operations ended with outcome.
func (m *Metrics) opCount(op, outcome string) int64 {
	c, err := m.ops.GetMetricWithLabelValues(op, outcome)
	if err != nil {
		return 0
	}
	return int64(counterValue(c))
}

func (m *Metrics) writeLocks(b *strings.Builder) {
	for _, op := range []string{"acquire", "extend", "release"} {
		for _, out := range []string{"ok", "contended", "no_quorum", "error"} {
			fmt.Fprintf(b, "quorum_%s_%s:%d\r\n", op, out, m.opCount(op, out))
		}
	}
	fmt.Fprintf(b, "validity_ratio_mean:%.4f\r\n", histogramMean(m.validity))
}

type writer interface{ Write(*dto.Metric) error }

func counterValue(c writer) float64 {
	var d dto.Metric
	if c.Write(&d) != nil || d.Counter == nil {
		return 0
	}
	return d.Counter.GetValue()
}

func histogramMean(h writer) float64 {
	var d dto.Metric
	if h.Write(&d) != nil || d.Histogram == nil || d.Histogram.GetSampleCount() == 0 {
		return 0
	}
	return d.Histogram.GetSampleSum() / float64(d.Histogram.GetSampleCount())
}
