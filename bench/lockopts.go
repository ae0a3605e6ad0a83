package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// The -lockopts mode measures LOCK with its options, N=3, side by side
// with -baseline over the same three redis-servers: a plain LOCK, and
// LOCK with FENCE, OWNER, PERMITS, SHARED and WAIT (on free keys, so that
// its first round grants), each without pipelining and with -P 16, with
// the CPU of redlockd per request. KEEPALIVE is left out: every lock it
// took would be renewed, by the same process, until its client closed.

// lockoptsRow is one LOCK form of the mode.
type lockoptsRow struct {
	name string
	opts []string // LOCK key 10000, then these
}

var lockoptsRows = []lockoptsRow{
	{"LOCK", nil},
	{"LOCK … FENCE", []string{"FENCE"}},
	{"LOCK … OWNER", []string{"OWNER", "w"}},
	{"LOCK … PERMITS 4", []string{"PERMITS", "4"}},
	{"LOCK … SHARED", []string{"SHARED"}},
	{"LOCK … WAIT 10", []string{"WAIT", "10"}},
}

// lockoptsPipelines are the -P of every row.
var lockoptsPipelines = []int{1, 16}

// lockoptsResults is a -lockopts run: per binary, per row and pipeline.
type lockoptsResults struct {
	machine     machine
	opts        options
	ticksPerSec int64
	bins        []string
	sums        [][]summary // [binary][row*len(lockoptsPipelines)+pipeline]
}

func runLockopts(ctx context.Context, o options, log io.Writer) (*lockoptsResults, error) {
	dir, bins, err := prepare(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &lockoptsResults{machine: describeMachine(), opts: o, ticksPerSec: clockTicks()}
	fmt.Fprintln(log, res.machine.String())
	var servers []*redisProc
	var procs []*proxyProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
		for _, s := range servers {
			s.stop()
		}
	}()
	var backends, addrs []string
	for i := range 3 {
		p, err := startRedis(mkdir(dir, fmt.Sprintf("lockopts-%d", i)))
		if err != nil {
			return nil, err
		}
		servers, backends, addrs = append(servers, p), append(backends, p.addr), append(addrs, p.addr)
	}
	for _, b := range bins {
		px, err := startProxy(b.path, backends, "--node-timeout", o.nodeTimeout.String())
		if err != nil {
			return nil, err
		}
		procs = append(procs, px)
		res.bins = append(res.bins, b.name)
	}
	cells := len(lockoptsRows) * len(lockoptsPipelines)
	samples := make([][][]sample, len(bins))
	for b := range bins {
		samples[b] = make([][]sample, cells)
	}
	err = interleave(o.reps, len(bins)*cells, func(rep, i int) error {
		b, c := i%len(bins), i/len(bins)
		row, pipe := lockoptsRows[c/len(lockoptsPipelines)], lockoptsPipelines[c%len(lockoptsPipelines)]
		t := target{addr: procs[b].addr, pid: procs[b].pid(), backends: servers, servers: addrs}
		// Keys from a space large enough that a run meets few held ones.
		cmd := append([]string{"-r", "10000000", "LOCK", fmt.Sprintf("lo:r%d:%d:__rand_int__", rep, i), "10000"}, row.opts...)
		n := o.lockoptsRequests
		if pipe > 1 {
			n *= 4
		}
		s, err := t.measure(ctx, workload{clients: o.workers, pipeline: pipe, requests: n, cmd: cmd})
		if err != nil && s.run.aborted == "" {
			return fmt.Errorf("%s %s -P %d: %w", bins[b].name, row.name, pipe, err)
		}
		samples[b][c] = append(samples[b][c], s)
		fmt.Fprintf(log, "%s %s -P %d: %s\n", bins[b].name, row.name, pipe, summarize([]sample{s}, res.ticksPerSec).describe())
		return nil
	})
	if err != nil {
		return nil, err
	}
	for b := range bins {
		var sums []summary
		for c := range cells {
			sums = append(sums, summarize(samples[b][c], res.ticksPerSec))
		}
		res.sums = append(res.sums, sums)
	}
	return res, nil
}

// markdown is the -lockopts run as a Markdown section: one pair of
// columns per binary and pipeline.
func (r *lockoptsResults) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### LOCK with its options, N=3, -c %d (median of %d, interleaved; %d requests per run, 4× with -P 16)\n\n",
		r.opts.workers, r.opts.reps, r.opts.lockoptsRequests)
	fmt.Fprintf(&b, "**Machine:** %s\n\n", r.machine)
	b.WriteString("| LOCK key 10000 … |")
	for _, pipe := range lockoptsPipelines {
		for _, name := range r.bins {
			fmt.Fprintf(&b, " %s -P %d: requests/s | CPU per request |", name, pipe)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|---|", len(r.bins)*len(lockoptsPipelines)) + "\n")
	for ri, row := range lockoptsRows {
		fmt.Fprintf(&b, "| %s |", row.name)
		for pi := range lockoptsPipelines {
			for bi := range r.bins {
				b.WriteString(r.sums[bi][ri*len(lockoptsPipelines)+pi].rateAndCPU())
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nKeys are `lo:__rand_int__` with `-r 10000000`; CPU is the redlockd process's utime+stime, in ticks of 1/%d s;\n"+
		"a run that a NOQUORUM aborted (redlockd's --node-timeout %v) is left out of its median.\n", r.ticksPerSec, r.opts.nodeTimeout)
	return b.String()
}
