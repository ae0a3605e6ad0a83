package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	t := &tabler{r: r, n0: r.opts.ns[0]}
	t.throughput()
	t.cpu()
	t.anchorRows()
	t.targets()
	t.lockPairs()
	t.scaling()
	t.memory()
	return t.b.String()
}

// tabler writes the tables, collecting the footnotes of aborted runs.
type tabler struct {
	r     *results
	n0    int
	b     strings.Builder
	notes []string
}

func (t *tabler) printf(format string, args ...any) { fmt.Fprintf(&t.b, format, args...) }

// note adds a footnote and returns its marker.
func (t *tabler) note(text string) string {
	t.notes = append(t.notes, text)
	return fmt.Sprintf("[^%d]", len(t.notes))
}

func (t *tabler) flushNotes() {
	for i, n := range t.notes {
		t.printf("\n[^%d]: %s", i+1, n)
	}
	if len(t.notes) > 0 {
		t.b.WriteString("\n")
	}
	t.notes = nil
}

// cell is a run's median requests/s and p99, marked when repetitions
// aborted (redis-benchmark stops at the first error reply).
func (t *tabler) cell(s summary) string {
	why := fmt.Sprintf("%d of %d repetitions aborted; redis-benchmark stops at the first error reply: %s", s.aborted, s.aborted+s.done, s.reason)
	switch {
	case s.done == 0 && s.aborted == 0:
		return "—"
	case s.done == 0:
		return "aborted" + t.note(why)
	}
	c := fmt.Sprintf("%.0f (p99 %.1f ms)", s.rps, s.p99)
	if s.aborted > 0 {
		c += t.note(why)
	}
	return c
}

// measured is a run's medians or, when every repetition aborted, its
// reruns', with a tag saying so.
func (t *tabler) measured(k runKey, w int) (summary, string) {
	if s := t.r.proxy[k][w]; s.done > 0 {
		return s, ""
	}
	return t.r.retry[k][w], fmt.Sprintf(" (at %v)", t.r.opts.retryTimeout)
}

// rps is a run's median requests/s, or its reruns' when every repetition
// aborted.
func (t *tabler) rps(k runKey, w int) float64 {
	s, _ := t.measured(k, w)
	return s.rps
}

func (t *tabler) throughput() {
	r := t.r
	t.printf("\n### SET lock:__rand_int__ v NX PX 10000 (redis-benchmark -r 100000; requests/s, median of %d)\n\n", r.opts.reps)
	t.printf("| run | redis-server direct |")
	for _, bin := range r.bins {
		for _, n := range r.opts.ns {
			t.printf(" %s N=%d |", bin, n)
		}
	}
	for _, bin := range r.bins {
		t.printf(" %s N=%d / direct |", bin, t.n0)
	}
	t.printf(" target |\n|---|---|%s\n", strings.Repeat("---|", len(r.bins)*(len(r.opts.ns)+1)+1))
	for w, target := range []string{"≥ 0.5", "≥ 0.25"} {
		t.printf("| %s | %s |", workloadName(r.opts, w), t.cell(r.direct[w]))
		for _, bin := range r.bins {
			for _, n := range r.opts.ns {
				t.printf(" %s |", t.retried(runKey{bin, n}, w))
			}
		}
		for _, bin := range r.bins {
			t.printf(" **%s** |", ratio(t.rps(runKey{bin, t.n0}, w), r.direct[w].rps))
		}
		t.printf(" %s |\n", target)
	}
	if r.opts.retryTimeout > 0 {
		t.printf("\nA repetition aborted at the %v node timeout is rerun against a redlockd with a %v node timeout\n"+
			"(go-redsync's per-node timeout for a 10 s expiry); when every repetition aborted, the ratios and the scaling table\n"+
			"use the reruns' median.\n", r.opts.nodeTimeout, r.opts.retryTimeout)
	}
	t.flushNotes()
}

func (t *tabler) retried(k runKey, w int) string {
	c := t.cell(t.r.proxy[k][w])
	if re := t.r.retry[k][w]; re.done+re.aborted > 0 {
		c += fmt.Sprintf("; at %v: %s", t.r.opts.retryTimeout, t.cell(re))
	}
	return c
}

func workloadName(o options, w int) string {
	if w == p16 {
		return fmt.Sprintf("-c %d -P %d", o.workers, pipelineDepth)
	}
	return fmt.Sprintf("-c %d", o.workers)
}

// cpu is the CPU per request of every process, and how many commands
// reached the servers that executed them per read.
func (t *tabler) cpu() {
	r := t.r
	t.printf("\n### CPU per request (user+system µs per SET, median of %d)\n\n", r.opts.reps)
	t.printf("| process | %s | commands per read | %s | commands per read |\n|---|---|---|---|---|\n",
		workloadName(r.opts, c50), workloadName(r.opts, p16))
	self := func(s summary) float64 { return s.selfUS }
	backends := func(s summary) float64 { return s.backendsUS }
	t.cpuRow("redis-server direct", r.direct, [2]string{}, self, true)
	for _, n := range r.opts.ns {
		for _, bin := range r.bins {
			var s [2]summary
			var tags [2]string
			for w := range 2 {
				s[w], tags[w] = t.measured(runKey{bin, n}, w)
			}
			t.cpuRow(fmt.Sprintf("%s N=%d", bin, n), s, tags, self, false)
			t.cpuRow(fmt.Sprintf("its %d backends together", n), s, tags, backends, true)
		}
	}
	least := r.minTicks()
	t.printf("\nCPU is utime+stime from `/proc/<pid>/stat`, in ticks of 1/%d s, read before and after each run and\n"+
		"divided by the requests completed; commands per read is `total_commands_processed` over\n"+
		"`total_reads_processed` of INFO stats, summed over the servers that executed the SETs. Each reading\n"+
		"truncates, so a figure is off by under 2 ticks: the smallest count behind a figure here was %d ticks, an\n"+
		"error of at most %s.", r.ticksPerSec, least, tickError(least))
	if least > 0 && least < 100 {
		t.printf(" That is over the 2%% aimed for: raise -requests and -pipelined-requests.")
	}
	t.printf("\n")
}

// cpuRow writes one process's CPU per request for both workloads and,
// for the servers that executed the SETs, their commands per read.
func (t *tabler) cpuRow(name string, s [2]summary, tags [2]string, us func(summary) float64, perRead bool) {
	t.printf("| %s |", name)
	for w := range 2 {
		if s[w].done == 0 {
			t.printf(" — | — |")
			continue
		}
		per := "—"
		if perRead {
			per = fmt.Sprintf("%.1f", s[w].perRead)
		}
		t.printf(" %.2f µs%s | %s |", us(s[w]), tags[w], per)
	}
	t.printf("\n")
}

// minTicks is the smallest tick count behind any CPU figure.
func (r *results) minTicks() int64 {
	all := []summary{r.direct[c50], r.direct[p16]}
	for _, s := range r.anchors {
		all = append(all, s[c50], s[p16])
	}
	for k, s := range r.proxy {
		all = append(all, s[c50], s[p16], r.retry[k][c50], r.retry[k][p16])
	}
	var m int64
	for _, s := range all {
		if s.minTicks > 0 && (m == 0 || s.minTicks < m) {
			m = s.minTicks
		}
	}
	return m
}

// targets is one row per goal, measured against its target, for each
// binary (N = ns[0] unless stated).
func (t *tabler) targets() {
	r := t.r
	t.printf("\n### Targets (N=%d, `redis-benchmark -c %d -r 100000 SET NX PX` unless stated; medians)\n\n| measure |", t.n0, r.opts.workers)
	for _, bin := range r.bins {
		t.printf(" %s |", bin)
	}
	t.printf(" target |\n|---|%s\n", strings.Repeat("---|", len(r.bins)+1))
	rows := []struct {
		name, target string
		cell         func(bin string) string
	}{
		{"redlockd CPU per request / redis-server direct's, no pipelining", "≤ 1.5", t.cpuRatio(c50, func(s summary) float64 { return s.selfUS })},
		{fmt.Sprintf("same, `-P %d`", pipelineDepth), "≤ 3", t.cpuRatio(p16, func(s summary) float64 { return s.selfUS })},
		{"redlockd → 1 CPU per request / twemproxy → 1's, no pipelining", "≤ 1.0", t.twemproxyRatio(c50)},
		{fmt.Sprintf("same, `-P %d`", pipelineDepth), "≤ 1.0", t.twemproxyRatio(p16)},
		{fmt.Sprintf("the %d backends' CPU per request together / direct's, `-P %d` (commands per read at the backends)", t.n0, pipelineDepth),
			fmt.Sprintf("≤ %.1f (%d × 1.5)", float64(t.n0)*1.5, t.n0), t.backendsRatio},
		{"throughput / direct, no pipelining", "≥ 0.5", func(bin string) string { return ratio(t.rps(runKey{bin, t.n0}, c50), r.direct[c50].rps) }},
		{fmt.Sprintf("throughput / direct, `-P %d`", pipelineDepth), "≥ 0.25", func(bin string) string { return ratio(t.rps(runKey{bin, t.n0}, p16), r.direct[p16].rps) }},
		{fmt.Sprintf("lock+unlock pairs/s / go-redsync's, %d goroutines (p99 no worse)", r.opts.workers), "≥ 3, p99 no worse", t.pairsRatio},
		{"N=5 / N=3 throughput: `-c`, `-P 16`, pairs", "≥ 0.8 each", t.scaleCell},
		{fmt.Sprintf("RSS with %d idle clients", r.opts.idle), "≤ 200 MB", func(bin string) string { return fmt.Sprintf("%.1f MB", mb(r.rss[bin].idle)) }},
	}
	for _, row := range rows {
		t.printf("| %s |", row.name)
		for _, bin := range r.bins {
			t.printf(" %s |", row.cell(bin))
		}
		t.printf(" %s |\n", row.target)
	}
}

// cpuRatio is a binary's CPU per request over the direct server's.
func (t *tabler) cpuRatio(w int, us func(summary) float64) func(string) string {
	return func(bin string) string {
		s, tag := t.measured(runKey{bin, t.n0}, w)
		d := t.r.direct[w]
		if s.done == 0 || d.done == 0 {
			return "—"
		}
		return fmt.Sprintf("**%s** (%.2f / %.2f µs%s)", ratio(us(s), d.selfUS), us(s), d.selfUS, tag)
	}
}

func (t *tabler) backendsRatio(bin string) string {
	c := t.cpuRatio(p16, func(s summary) float64 { return s.backendsUS })(bin)
	if s, _ := t.measured(runKey{bin, t.n0}, p16); s.done > 0 {
		c += fmt.Sprintf("; %.1f per read", s.perRead)
	}
	return c
}

func (t *tabler) pairsRatio(bin string) string {
	rs, rl := t.r.redsync[t.n0], t.r.pairs[runKey{bin, t.n0}]
	return fmt.Sprintf("**%s** (p99 %s vs %s: %s)", ratio(rl.perSec, rs.perSec), ms(rl.p99), ms(rs.p99), yesNo(rl.p99 <= rs.p99))
}

// scaleCell is the N=5 over N=ns[0] ratios, or a dash without N=5.
func (t *tabler) scaleCell(bin string) string {
	if !slices.Contains(t.r.opts.ns, 5) || t.n0 == 5 {
		return "— (no N=5 run)"
	}
	return strings.Join(t.scale(bin, 5), " / ")
}

// scale is the ratios of N=n over N=ns[0]: SET NX -c, -P 16, pairs.
func (t *tabler) scale(bin string, n int) []string {
	k, k0 := runKey{bin, n}, runKey{bin, t.n0}
	return []string{ratio(t.rps(k, c50), t.rps(k0, c50)), ratio(t.rps(k, p16), t.rps(k0, p16)),
		ratio(t.r.pairs[k].perSec, t.r.pairs[k0].perSec)}
}

func (t *tabler) lockPairs() {
	r := t.r
	t.printf("\n### lock+unlock pairs, %d goroutines, unique keys, %v per run (median of %d)\n\n", r.opts.workers, r.opts.pairsFor, r.opts.reps)
	t.printf("| N | binary | go-redsync pairs/s | acquire p50 | p99 | binary pairs/s | acquire p50 | p99 | failed (redsync / binary) | binary / go-redsync (target ≥ 3) | p99 no worse |\n")
	t.printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.opts.ns {
		rs := r.redsync[n]
		for _, bin := range r.bins {
			rl := r.pairs[runKey{bin, n}]
			t.printf("| %d | %s | %.0f | %s | %s | %.0f | %s | %s | %d / %d | **%s** | %s |\n", n, bin,
				rs.perSec, ms(rs.p50), ms(rs.p99), rl.perSec, ms(rl.p50), ms(rl.p99),
				rs.failed, rl.failed, ratio(rl.perSec, rs.perSec), yesNo(rl.p99 <= rs.p99))
		}
	}
}

func (t *tabler) scaling() {
	r := t.r
	if len(r.opts.ns) < 2 {
		return
	}
	t.printf("\n### Scaling with N (at N / at N=%d; target for N=5: ≥ 0.8)\n\n", t.n0)
	t.printf("| N | binary | SET NX -c | SET NX -P 16 | lock+unlock pairs |\n|---|---|---|---|---|\n")
	for _, n := range r.opts.ns[1:] {
		for _, bin := range r.bins {
			t.printf("| %d | %s | %s |\n", n, bin, strings.Join(t.scale(bin, n), " | "))
		}
	}
}

func (t *tabler) memory() {
	r := t.r
	t.printf("\n### Memory (N=%d)\n\n| state |", t.n0)
	for _, bin := range r.bins {
		t.printf(" %s RSS |", bin)
	}
	t.printf("\n|---|%s\n| after the runs above, no clients |", strings.Repeat("---|", len(r.bins)))
	for _, bin := range r.bins {
		t.printf(" %.1f MB |", mb(r.rss[bin].before))
	}
	t.printf("\n| %d idle clients (one PING each) |", r.opts.idle)
	for _, bin := range r.bins {
		t.printf(" **%.1f MB** |", mb(r.rss[bin].idle))
	}
	t.printf("\n\nTarget: ≤ 200 MB with 10,000 idle clients.\n")
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
	fmt.Fprintf(&b, "one workload at a time, each repeated %d times interleaved with the others (direct, redlockd, … and\n", r.opts.reps)
	b.WriteString("again), on the machine below; the figures are the medians. Compare the ratios: the absolute\n")
	b.WriteString("figures depend on the machine and on whatever else ran on it.\n\n")
	fmt.Fprintf(&b, "**Machine:** %s\n\n", r.machine)
	b.WriteString("redlockd is the binary built from `./cmd/redlockd`, run as a child process with its defaults")
	if r.opts.redlockd != "" {
		b.WriteString(" (a prebuilt binary: `-redlockd`)")
	}
	fmt.Fprintf(&b, "\n(node timeout %v, drift 0.01, max-clients 10000, restart quarantine and the metrics observer as shipped, no\n`--metrics-addr`); ", r.opts.nodeTimeout)
	if r.opts.baseline != "" {
		fmt.Fprintf(&b, "baseline is `%s`, run the same way\nover the same backends; ", filepath.Base(r.opts.baseline))
	}
	b.WriteString("the load generators (redis-benchmark, go-redsync, go-redis) and the\n")
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
