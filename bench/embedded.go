package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The -embedded mode measures redlockd in embedded mode, the one
// `go run ./cmd/redlockd` starts: no backends, three in-process nodes
// that run the lock kinds' scripts and the admitted client scripts in
// their Lua engine. It compares a plain SET NX PX with a client script
// that takes the same lock (replicated to the three nodes) at 1, 10 and
// -workers clients, and times lock+unlock pairs of go-redis, with the
// CPU of the process per request or pair.

// embeddedEval is the client script: redlockd admits it as an exclusive,
// expiring claim and replicates it to every node.
const embeddedEval = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return 1 end return 0"

// embeddedRow is one redis-benchmark workload of the mode.
type embeddedRow struct {
	name    string
	clients int
	// cmd is the command with the run's key prefix in its key, so that
	// no run meets the locks of the one before.
	cmd func(prefix string) []string
}

func embeddedRows(o options) []embeddedRow {
	var rows []embeddedRow
	for _, c := range []int{1, 10, o.workers} {
		rows = append(rows, embeddedRow{"SET NX PX", c, func(p string) []string {
			return []string{"-r", "100000", "SET", "lock:" + p + "__rand_int__", "v", "NX", "PX", "10000"}
		}}, embeddedRow{"EVAL", c, func(p string) []string {
			return []string{"-r", "100000", "EVAL", embeddedEval, "1", "lk:" + p + "__rand_int__", "v"}
		}})
	}
	return rows
}

// embeddedResults is an -embedded run: per binary, a summary per row
// and the pairs' figures.
type embeddedResults struct {
	machine     machine
	opts        options
	ticksPerSec int64
	bins        []string
	rows        []embeddedRow
	set         [][]summary // [binary][row]
	pairs       []pairSummary
	pairUS      []float64 // CPU per pair
}

func runEmbedded(ctx context.Context, o options, log io.Writer) (*embeddedResults, error) {
	dir, bins, err := prepare(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &embeddedResults{machine: describeMachine(), opts: o, ticksPerSec: clockTicks(), rows: embeddedRows(o)}
	fmt.Fprintln(log, res.machine.String())
	var procs []*proxyProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for i, b := range bins {
		args := []string{"--node-timeout", o.nodeTimeout.String()}
		if i == 0 && o.cpuProfile != "" {
			args = append(args, "--cpuprofile", o.cpuProfile)
		}
		px, err := startProxy(b.path, nil, args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, px)
		res.bins = append(res.bins, b.name)
	}
	items := len(bins) * (len(res.rows) + 1)
	samples := make([][][]sample, len(bins))
	pairs := make([][]pairResult, len(bins))
	pairTicks := make([][]int64, len(bins))
	for i := range bins {
		samples[i] = make([][]sample, len(res.rows))
	}
	err = interleave(o.reps, items, func(rep, i int) error {
		b, r := i%len(bins), i/len(bins)
		t := target{addr: procs[b].addr, pid: procs[b].pid()}
		prefix := fmt.Sprintf("r%d:%d:", rep, i)
		if r == len(res.rows) {
			before, err := procTicks(t.pid)
			if err != nil {
				return err
			}
			l := newProxyLocker(t.addr, o.workers)
			p, err := runPairs(ctx, l, o.workers, o.pairsFor, prefix)
			l.close()
			after, tErr := procTicks(t.pid)
			if err = errors.Join(err, tErr); err != nil {
				return fmt.Errorf("%s pairs: %w", bins[b].name, err)
			}
			pairs[b], pairTicks[b] = append(pairs[b], p), append(pairTicks[b], after-before)
			fmt.Fprintf(log, "%s lock+unlock: %s\n", bins[b].name, summarizePairs([]pairResult{p}).describe())
			return nil
		}
		row := res.rows[r]
		s, err := t.measure(ctx, workload{clients: row.clients, pipeline: 1, requests: o.embeddedRequests, cmd: row.cmd(prefix)})
		// An aborted run is a result (the reason is reported); a run
		// that could not start is not.
		if err != nil && s.run.aborted == "" {
			return fmt.Errorf("%s %s -c %d: %w", bins[b].name, row.name, row.clients, err)
		}
		samples[b][r] = append(samples[b][r], s)
		fmt.Fprintf(log, "%s %s -c %d: %s\n", bins[b].name, row.name, row.clients,
			summarize([]sample{s}, res.ticksPerSec).describe())
		return nil
	})
	if err != nil {
		return nil, err
	}
	for b := range bins {
		var sums []summary
		for r := range res.rows {
			sums = append(sums, summarize(samples[b][r], res.ticksPerSec))
		}
		res.set = append(res.set, sums)
		res.pairs = append(res.pairs, summarizePairs(pairs[b]))
		us := make([]float64, len(pairs[b]))
		for i, p := range pairs[b] {
			us[i] = float64(pairTicks[b][i]) * 1e6 / float64(res.ticksPerSec) / float64(p.pairs)
		}
		res.pairUS = append(res.pairUS, median(us))
	}
	return res, nil
}

// markdown is the -embedded run as a Markdown section: one column per
// binary.
func (r *embeddedResults) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Embedded mode (median of %d, interleaved; %d requests per redis-benchmark run)\n\n",
		r.opts.reps, r.opts.embeddedRequests)
	fmt.Fprintf(&b, "**Machine:** %s\n\n", r.machine)
	b.WriteString("| workload |")
	for _, name := range r.bins {
		fmt.Fprintf(&b, " %s: requests/s | CPU per request |", name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|---|", len(r.bins)) + "\n")
	for i, row := range r.rows {
		fmt.Fprintf(&b, "| %s, -c %d |", row.name, row.clients)
		for bi := range r.bins {
			b.WriteString(r.set[bi][i].rateAndCPU())
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| lock+unlock pairs/s, %d goroutines |", r.opts.workers)
	for bi := range r.bins {
		fmt.Fprintf(&b, " %.0f (%d failed) | %.2f µs per pair |", r.pairs[bi].perSec, r.pairs[bi].failed, r.pairUS[bi])
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "EVAL is `EVAL \"%s\" 1 lk:__rand_int__ v`; SET is `SET lock:__rand_int__ v NX PX 10000`,\n"+
		"both with `-r 100000`. A pair is SET NX PX then the compare-and-delete script (EVALSHA), from go-redis\n"+
		"(one client, pool of %d), for %v. CPU is the redlockd process's utime+stime, in ticks of 1/%d s.\n",
		embeddedEval, r.opts.workers, r.opts.pairsFor, r.ticksPerSec)
	return b.String()
}

// rateAndCPU is s as two table cells: requests/s (with the runs a
// NOQUORUM aborted, when any) and the proxy's CPU per request.
func (s summary) rateAndCPU() string {
	switch {
	case s.done == 0:
		return fmt.Sprintf(" aborted: %s | — |", s.reason)
	case s.aborted > 0:
		return fmt.Sprintf(" %.0f (%d of %d aborted) | %.2f µs |", s.rps, s.aborted, s.aborted+s.done, s.selfUS)
	}
	return fmt.Sprintf(" %.0f | %.2f µs |", s.rps, s.selfUS)
}
