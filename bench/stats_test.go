package main

import (
	"errors"
	"slices"
	"testing"
)

func TestInterleave(t *testing.T) {
	type call struct{ rep, i int }
	var got []call
	err := interleave(3, 3, func(rep, i int) error {
		got = append(got, call{rep, i})
		return nil
	})
	want := []call{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("interleave(3, 3) called %v, %v; want %v", got, err, want)
	}

	got = nil
	stop := errors.New("stop")
	err = interleave(3, 2, func(rep, i int) error {
		got = append(got, call{rep, i})
		if rep == 1 && i == 0 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(got, []call{{0, 0}, {0, 1}, {1, 0}}) {
		t.Fatalf("after an error: calls %v, err %v; want the calls up to it and its error", got, err)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{9, 1, 5}, 5},
		{[]float64{3, 1, 4, 2}, 2.5},
		{[]float64{2, 2, 8}, 2},
	} {
		in := slices.Clone(tt.in)
		if got := median(in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("median reordered its input: %v, was %v", in, tt.in)
		}
	}
}

func TestSummarize(t *testing.T) {
	ok := func(rps float64, self, backends int64, cmds, reads int64) sample {
		return sample{run: benchRun{rps: rps, p99: rps / 1000}, requests: 100000, self: self, backends: backends,
			at: serverStats{cmds, reads}}
	}
	ss := []sample{
		ok(30000, 250, 90, 300000, 100000), // 25 µs, 9 µs, 3 per read
		{run: benchRun{aborted: "NOQUORUM"}, requests: 100000, self: 5},
		ok(40000, 200, 120, 300000, 50000), // 20 µs, 12 µs, 6 per read
		ok(35000, 300, 100, 300000, 75000), // 30 µs, 10 µs, 4 per read
	}
	s := summarize(ss, 100)
	want := summary{rps: 35000, p99: 35, selfUS: 25, backendsUS: 10, perRead: 4, done: 3, aborted: 1,
		reason: "NOQUORUM", minTicks: 90, readsPer: -1, writesPer: -1}
	if s != want {
		t.Fatalf("summarize = %+v\nwant        %+v", s, want)
	}
	// With the system calls read for every completed run, their medians
	// per request; one run without them leaves them unknown (-1).
	counted := slices.Clone(ss)
	for i, c := range []syscalls{{300000, 100000}, {}, {200000, 150000}, {250000, 120000}} {
		counted[i].sys, counted[i].sysOK = c, i != 1
	}
	if s := summarize(counted, 100); s.readsPer != 2.5 || s.writesPer != 1.2 {
		t.Errorf("system calls per request %v reads, %v writes; want 2.5, 1.2", s.readsPer, s.writesPer)
	}
	counted[2].sysOK = false
	if s := summarize(counted, 100); s.readsPer != -1 || s.writesPer != -1 {
		t.Errorf("a run without system calls: %v reads, %v writes; want -1, -1", s.readsPer, s.writesPer)
	}
	if none := summarize(ss[1:2], 100); none.done != 0 || none.aborted != 1 || none.rps != 0 {
		t.Fatalf("all aborted: %+v", none)
	}
}

func TestSummarizePairs(t *testing.T) {
	rs := []pairResult{
		{pairs: 1000, elapsed: 1e9, p50: 3, p99: 9, failed: 1},
		{pairs: 3000, elapsed: 1e9, p50: 1, p99: 7},
		{pairs: 2000, elapsed: 1e9, p50: 2, p99: 8, failed: 2},
	}
	got := summarizePairs(rs)
	if want := (pairSummary{perSec: 2000, p50: 2, p99: 8, failed: 3}); got != want {
		t.Fatalf("summarizePairs = %+v, want %+v", got, want)
	}
}

func TestTickError(t *testing.T) {
	for ticks, want := range map[int64]string{0: "—", 100: "2.0%", 200: "1.0%", 400: "0.5%"} {
		if got := tickError(ticks); got != want {
			t.Errorf("tickError(%d) = %q, want %q", ticks, got, want)
		}
	}
}

// TestSummarizeRelease: CPU and backend commands are per pair of each
// run, then the median over the runs, like the latencies.
func TestSummarizeRelease(t *testing.T) {
	ss := []releaseSample{
		{pairs: pairResult{pairs: 1000, elapsed: 1e9, relP50: 4, relP99: 40}, self: 300, backends: 100, at: serverStats{commands: 15000}},
		{pairs: pairResult{pairs: 2000, elapsed: 1e9, relP50: 2, relP99: 20}, self: 200, backends: 600, at: serverStats{commands: 30000}},
		{pairs: pairResult{pairs: 4000, elapsed: 1e9, relP50: 3, relP99: 30, failed: 2}, self: 1200, backends: 1200, at: serverStats{commands: 80000}},
	}
	got := summarizeRelease(ss, 100)
	// self per pair: 3000, 1000, 3000 µs; backends: 1000, 3000, 3000 µs;
	// commands per pair: 15, 15, 20.
	want := releaseSummary{pairs: pairSummary{perSec: 2000, failed: 2}, relP50: 3, relP99: 30,
		selfUS: 3000, backendsUS: 3000, cmdsPer: 15, minTicks: 100}
	if got != want {
		t.Fatalf("summarizeRelease = %+v, want %+v", got, want)
	}
}
