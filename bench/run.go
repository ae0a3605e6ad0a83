package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// results is everything one run measured: medians over the repetitions.
type results struct {
	machine     machine
	opts        options
	ticksPerSec int64
	bins        []string // "redlockd", and "baseline" with -baseline
	direct      [2]summary
	// anchors are twemproxy → 1 and redlockd → 1, by name (anchors.go).
	anchors map[string][2]summary
	proxy   map[runKey][2]summary // by workload
	retry   map[runKey][2]summary // reruns of aborted runs, when any
	redsync map[int]pairSummary
	pairs   map[runKey]pairSummary
	rss     map[string]rssFigures
}

// runKey is one binary at one backend count.
type runKey struct {
	bin string
	n   int
}

// rssFigures is one binary's memory at N=ns[0].
type rssFigures struct{ before, idle int64 }

// The two redis-benchmark workloads, as indexes into [2] arrays.
const (
	c50 = iota // -c workers
	p16        // -c workers -P pipelineDepth
)

const pipelineDepth = 16

// workload is one redis-benchmark invocation's shape, and its command
// (nil: setNXArgs).
type workload struct {
	clients, pipeline, requests int
	cmd                         []string
}

func workloads(o options) [2]workload {
	return [2]workload{{o.workers, 1, o.requests, nil}, {o.workers, pipelineDepth, o.pipelinedRequests, nil}}
}

func run(ctx context.Context, o options, log io.Writer) (*results, error) {
	if lim, err := raiseNoFile(); err != nil || lim < uint64(o.idle)+1000 {
		return nil, fmt.Errorf("open-file limit %d too low for %d idle connections: %v", lim, o.idle, err)
	}
	dir, bins, err := prepare(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &results{machine: describeMachine(), opts: o, ticksPerSec: clockTicks(),
		anchors: map[string][2]summary{}, proxy: map[runKey][2]summary{}, retry: map[runKey][2]summary{}, redsync: map[int]pairSummary{},
		pairs: map[runKey]pairSummary{}, rss: map[string]rssFigures{}}
	for _, b := range bins {
		res.bins = append(res.bins, b.name)
	}
	fmt.Fprintln(log, res.machine.String())
	for i, n := range o.ns {
		m := &nRun{o: o, dir: dir, n: n, first: i == 0, bins: bins, res: res, log: log}
		if err := m.measure(ctx); err != nil {
			return nil, fmt.Errorf("measuring N=%d: %w", n, err)
		}
	}
	res.print(log)
	return res, nil
}

// prepare makes a run's scratch directory, which the caller removes, and
// finds or builds the binaries into it.
func prepare(o options) (string, []binary, error) {
	dir, err := os.MkdirTemp("", "redlockd-bench-")
	if err != nil {
		return "", nil, err
	}
	bins, err := binaries(o, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, bins, nil
}

// binary is one redlockd build under measurement.
type binary struct{ name, path string }

// binaries is the build under test (-redlockd, or ./cmd/redlockd built
// now) and the -baseline build, if any.
func binaries(o options, dir string) ([]binary, error) {
	main := o.redlockd
	if main == "" {
		var err error
		if main, err = buildRedlockd(dir); err != nil {
			return nil, err
		}
	}
	bins := []binary{{"redlockd", main}}
	if o.baseline != "" {
		bins = append(bins, binary{"baseline", o.baseline})
	}
	return bins, nil
}

func mkdir(dir, name string) string {
	d := filepath.Join(dir, name)
	_ = os.MkdirAll(d, 0o755)
	return d
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
