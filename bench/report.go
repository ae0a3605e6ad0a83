package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the figures were taken; ratios travel between
// machines, absolute numbers do not.
type machine struct {
	nproc     int
	cpu       string
	goVersion string
	redis     string
	load      string
	when      time.Time
}

func describeMachine() machine {
	m := machine{nproc: runtime.NumCPU(), goVersion: runtime.Version(), when: time.Now().UTC()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		m.redis = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

func (m machine) String() string {
	return fmt.Sprintf("%d CPUs (%s), %s, %s, load average at start %s, %s",
		m.nproc, m.cpu, m.goVersion, m.redis, m.load, m.when.Format(time.RFC3339))
}

func (r *results) print(w io.Writer) { io.WriteString(w, r.tables()) }

// tables renders every figure and ratio as Markdown tables, which read
// well in a terminal too.
func (r *results) tables() string {
	var b strings.Builder
	n0 := r.opts.ns[0]
	var notes []string
	cell := func(run benchRun) string {
		if run.aborted != "" {
			notes = append(notes, run.aborted)
			return fmt.Sprintf("aborted[^%d]", len(notes))
		}
		return fmt.Sprintf("%.0f (p99 %.1f ms)", run.rps, run.p99)
	}
	fmt.Fprintf(&b, "\n### SET lock:__rand_int__ v NX PX 10000 (redis-benchmark -r 100000; requests/s)\n\n")
	b.WriteString("| run | redis-server direct |")
	for _, n := range r.opts.ns {
		fmt.Fprintf(&b, " redlockd N=%d |", n)
	}
	fmt.Fprintf(&b, " redlockd N=%d / direct | target |\n|---|---|", n0)
	b.WriteString(strings.Repeat("---|", len(r.opts.ns)+2) + "\n")
	retried := func(run, retry benchRun) string {
		c := cell(run)
		if run.aborted != "" && (retry.rps > 0 || retry.aborted != "") {
			c += fmt.Sprintf("; at %v: %s", r.opts.retryTimeout, cell(retry))
		}
		return c
	}
	row := func(name string, direct benchRun, get func(setNX) (benchRun, benchRun), rps func(setNX) float64, target string) {
		fmt.Fprintf(&b, "| %s | %s |", name, cell(direct))
		for _, n := range r.opts.ns {
			fmt.Fprintf(&b, " %s |", retried(get(r.proxy[n])))
		}
		fmt.Fprintf(&b, " **%s** | %s |\n", ratio(rps(r.proxy[n0]), direct.rps), target)
	}
	row(fmt.Sprintf("-c %d", r.opts.workers), r.direct.c50Run,
		func(s setNX) (benchRun, benchRun) { return s.c50Run, s.c50Retry }, func(s setNX) float64 { return s.c50 }, "≥ 0.5")
	row(fmt.Sprintf("-c %d -P %d", r.opts.workers, pipelineDepth), r.direct.p16Run,
		func(s setNX) (benchRun, benchRun) { return s.p16Run, s.p16Retry }, func(s setNX) float64 { return s.p16 }, "≥ 0.25")
	if r.opts.retryTimeout > 0 {
		fmt.Fprintf(&b, "\nA run aborted at the %v node timeout is rerun against a fresh redlockd with a %v node timeout\n"+
			"(go-redsync's per-node timeout for a 10 s expiry); the ratios and the scaling table use the rerun's figure then.\n",
			r.opts.nodeTimeout, r.opts.retryTimeout)
	}
	for i, n := range notes {
		fmt.Fprintf(&b, "\n[^%d]: redis-benchmark stops at the first error reply: %s", i+1, n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\n### lock+unlock pairs, %d goroutines, unique keys, %v per run\n\n", r.opts.workers, r.opts.pairsFor)
	b.WriteString("| N | go-redsync pairs/s | acquire p50 | p99 | redlockd pairs/s | acquire p50 | p99 | failed (redsync / redlockd) | redlockd / go-redsync (target ≥ 3) | p99 no worse |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.opts.ns {
		rs, rl := r.redsync[n], r.redlockd[n]
		fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %.0f | %s | %s | %d / %d | **%s** | %s |\n", n,
			rs.perSec(), ms(rs.p50), ms(rs.p99), rl.perSec(), ms(rl.p50), ms(rl.p99),
			rs.failed, rl.failed, ratio(rl.perSec(), rs.perSec()), yesNo(rl.p99 <= rs.p99))
	}
	if len(r.opts.ns) > 1 {
		fmt.Fprintf(&b, "\n### Scaling with N (redlockd at N / redlockd at N=%d; target for N=5: ≥ 0.8)\n\n", n0)
		b.WriteString("| N | SET NX -c | SET NX -P 16 | lock+unlock pairs |\n|---|---|---|---|\n")
		for _, n := range r.opts.ns[1:] {
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", n, ratio(r.proxy[n].c50, r.proxy[n0].c50),
				ratio(r.proxy[n].p16, r.proxy[n0].p16), ratio(r.redlockd[n].perSec(), r.redlockd[n0].perSec()))
		}
	}
	fmt.Fprintf(&b, "\n### Memory (redlockd, N=%d)\n\n| state | RSS |\n|---|---|\n", n0)
	fmt.Fprintf(&b, "| after the runs above, no clients | %.1f MB |\n", mb(r.rssBefore))
	fmt.Fprintf(&b, "| %d idle clients (one PING each) | **%.1f MB** (target ≤ 200 MB) |\n", r.idle, mb(r.rssIdle))
	return b.String()
}

// ratio is a/b to two places, or a dash when either run did not complete.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func (r *results) markdown() string {
	var b strings.Builder
	b.WriteString("# redlockd benchmark results\n\n")
	b.WriteString("Produced by `go -C bench run .` (see `bench/main.go`); every row was measured in the same run,\n")
	b.WriteString("one workload at a time, on the machine below. Compare the ratios: the absolute\n")
	b.WriteString("figures depend on the machine and on whatever else ran on it.\n\n")
	fmt.Fprintf(&b, "**Machine:** %s\n\n", r.machine)
	fmt.Fprintf(&b, "redlockd runs as a child process with the defaults of `cmd/redlockd` (node timeout %v, drift 0.01,\n", r.opts.nodeTimeout)
	b.WriteString("max-clients 10000); the load generators (redis-benchmark, go-redsync, go-redis) and the\n")
	b.WriteString("redis-servers share the same CPUs. go-redsync runs with its defaults (per-node timeout 5% of the expiry,\n")
	b.WriteString("here 500 ms), one go-redis pool per backend.\n")
	b.WriteString(r.tables())
	return b.String()
}

// notesHeading starts the hand-written part of the results file: what the
// profile of a run showed and what would close a missed target. A new run
// rewrites the tables above it and keeps it, so update it with the figures.
const notesHeading = "## Analysis (hand-written; kept by `go -C bench run .`)"

// keptNotes returns the hand-written part of an earlier results file, from
// notesHeading on, after a blank line; "" when it has none.
func keptNotes(old string) string {
	i := strings.Index(old, notesHeading)
	if i < 0 {
		return ""
	}
	return "\n" + old[i:]
}
