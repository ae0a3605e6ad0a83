package main

import (
	"strings"
	"testing"
	"time"
)

// fakeResults is a run at N=3 where every repetition through redlockd
// aborted at the node timeout and the reruns completed.
func fakeResults() *results {
	o := options{ns: []int{3}, reps: 3, workers: 50, idle: 10000, pairsFor: time.Second,
		nodeTimeout: 50 * time.Millisecond, retryTimeout: 500 * time.Millisecond}
	done := func(rps, self, backends float64) summary {
		return summary{rps: rps, p99: 1, selfUS: self, backendsUS: backends, perRead: 4, done: 3, minTicks: 150}
	}
	aborted := summary{aborted: 3, reason: "NOQUORUM 1 of 3 backends answered"}
	k := runKey{"redlockd", 3}
	return &results{opts: o, ticksPerSec: 100, bins: []string{"redlockd"},
		direct:  [2]summary{done(80000, 8, 0), done(400000, 2, 0)},
		proxy:   map[runKey][2]summary{k: {aborted, aborted}},
		retry:   map[runKey][2]summary{k: {done(40000, 20, 10), done(100000, 16, 9)}},
		redsync: map[int]pairSummary{3: {perSec: 1000, p99: time.Millisecond}},
		pairs:   map[runKey]pairSummary{k: {perSec: 3000, p99: time.Millisecond}},
		rss:     map[string]rssFigures{"redlockd": {before: 20 << 20, idle: 150 << 20}},
	}
}

// TestTablesUseRerunsWhenEveryRepetitionAborted: the CPU figures and the
// targets come from the reruns then, marked as such, like the ratios.
func TestTablesUseRerunsWhenEveryRepetitionAborted(t *testing.T) {
	md := fakeResults().tables()
	for _, want := range []string{
		"| redlockd N=3 | 20.00 µs (at 500ms) | — | 16.00 µs (at 500ms) | — |",
		"| its 3 backends together | 10.00 µs (at 500ms) | 4.0 | 9.00 µs (at 500ms) | 4.0 |",
		"| **2.50** (20.00 / 8.00 µs (at 500ms)) | ≤ 1.5 |",
		"| **8.00** (16.00 / 2.00 µs (at 500ms)) | ≤ 3 |",
		"| **4.50** (9.00 / 2.00 µs (at 500ms)); 4.0 per read | ≤ 4.5 (3 × 1.5) |",
		"| throughput / direct, no pipelining | 0.50 | ≥ 0.5 |",
		"| throughput / direct, `-P 16` | 0.25 | ≥ 0.25 |",
		"| **3.00** (p99 1.00 ms vs 1.00 ms: yes) |",
		"| RSS with 10000 idle clients | 150.0 MB | ≤ 200 MB |",
		"aborted[^1]; at 500ms: 40000 (p99 1.0 ms)",
		"3 of 3 repetitions aborted",
		"the smallest count behind a figure here was 150 ticks, an\nerror of at most 1.3%.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("tables lack %q:\n%s", want, md)
		}
	}
}
