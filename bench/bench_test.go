package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/testkit/leaktest"
)

func TestMain(m *testing.M) {
	serveFloorIfAsked()
	leaktest.VerifyTestMain(m)
}

// TestSmoke runs the benchmark's smoke mode end to end, so that it cannot
// rot: every workload must complete and produce sane numbers. Speed is not
// asserted; that is what the benchmark itself reports. The built binary is
// measured against itself as the baseline, with a CPU profile.
func TestSmoke(t *testing.T) {
	bin, err := buildRedlockd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	o, err := parseFlags([]string{"-smoke", "-redlockd", bin, "-baseline", bin, "-cpuprofile", profile})
	if err != nil {
		t.Fatal(err)
	}
	// A loaded CI machine must not turn the smoke run into a timeout hunt.
	o.nodeTimeout = 2 * time.Second
	var log strings.Builder
	res, err := run(t.Context(), o, &log)
	if err != nil {
		t.Fatalf("smoke run: %v\n%s", err, log.String())
	}
	for _, c := range smokeChecks(res) {
		if !c.ok {
			t.Errorf("%s: not measured\n%s", c.name, log.String())
		}
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile of redlockd: %v", err)
	}
	md := res.markdown()
	for _, want := range []string{"**Machine:**", "| -c 50 |", "| -c 50 -P 16 |", "| 3 | redlockd |", "| 3 | baseline |",
		"idle clients", "### CPU per request", "| its 3 backends together |", "### Targets", "| ≤ 1.5 |", "ticks of 1/"} {
		if !strings.Contains(md, want) {
			t.Errorf("results lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("results hold a NaN or Inf:\n%s", md)
	}
}

type check struct {
	name string
	ok   bool
}

// smokeChecks are the figures a smoke run must have produced. The direct
// server's CPU is not among them: a few thousand requests cost it about
// one clock tick, which may read as none.
func smokeChecks(res *results) []check {
	checks := []check{
		{"direct -c", res.direct[c50].rps > 0 && res.direct[c50].perRead > 0},
		{"direct -P", res.direct[p16].rps > 0 && res.direct[p16].perRead > 1},
		{"redsync pairs", res.redsync[3].perSec > 0 && res.redsync[3].p50 > 0 && res.redsync[3].p99 >= res.redsync[3].p50},
	}
	one := res.anchors[anchorRedlockd1]
	checks = append(checks, check{"redlockd → 1 -c", one[c50].rps > 0 && one[c50].done == res.opts.reps},
		check{"redlockd → 1 -P", one[p16].rps > 0 && one[p16].done == res.opts.reps})
	floor := res.anchors[anchorGoFloor]
	checks = append(checks, check{"go floor -c", floor[c50].rps > 0 && floor[c50].done == res.opts.reps},
		check{"go floor -P", floor[p16].rps > 0 && floor[p16].done == res.opts.reps})
	if epollFloorSupported {
		ep := res.anchors[anchorEpollFloor]
		checks = append(checks, check{"epoll floor -c", ep[c50].rps > 0 && ep[c50].done == res.opts.reps},
			check{"epoll floor -P", ep[p16].rps > 0 && ep[p16].done == res.opts.reps})
	}
	if _, err := exec.LookPath("nutcracker"); err == nil {
		tw := res.anchors[anchorTwemproxy]
		checks = append(checks, check{"twemproxy -c", tw[c50].rps > 0 && tw[c50].done == res.opts.reps},
			check{"twemproxy -P", tw[p16].rps > 0 && tw[p16].done == res.opts.reps && tw[p16].perRead > 0})
	}
	for _, bin := range []string{"redlockd", "baseline"} {
		s, k := res.proxy[runKey{bin, 3}], runKey{bin, 3}
		checks = append(checks,
			check{bin + " -c", s[c50].rps > 0 && s[c50].done == res.opts.reps},
			check{bin + " -P", s[p16].rps > 0 && s[p16].done == res.opts.reps},
			check{bin + " -P CPU", s[p16].selfUS > 0 && s[p16].backendsUS > 0 && s[p16].perRead > 0},
			check{bin + " pairs", res.pairs[k].perSec > 0 && res.pairs[k].p50 > 0 && res.pairs[k].p99 >= res.pairs[k].p50},
			check{bin + " rss", res.rss[bin].idle > 0 && res.rss[bin].before > 0})
	}
	return checks
}

func TestKeptNotes(t *testing.T) {
	notes := notesHeading + "\n\nwhy\n"
	for _, tt := range []struct{ old, want string }{
		{"", ""},
		{"# tables only\n", ""},
		{"# tables\n\n" + notes, "\n" + notes},
	} {
		if got := keptNotes(tt.old); got != tt.want {
			t.Errorf("keptNotes(%q) = %q, want %q", tt.old, got, tt.want)
		}
	}
}

// TestReleaseSmoke runs the -release mode end to end: each of the three
// releases must have freed every lock it took and produced its figures.
func TestReleaseSmoke(t *testing.T) {
	bin, err := buildRedlockd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-smoke", "-release", "-redlockd", bin})
	if err != nil {
		t.Fatal(err)
	}
	o.nodeTimeout = 2 * time.Second
	var log strings.Builder
	res, err := runRelease(t.Context(), o, &log)
	if err != nil {
		t.Fatalf("release run: %v\n%s", err, log.String())
	}
	if len(res.kinds) != len(releaseKinds) {
		t.Fatalf("%d summaries for %d release kinds", len(res.kinds), len(releaseKinds))
	}
	for i, s := range res.kinds {
		name := releaseKinds[i].name
		if s.pairs.perSec <= 0 || s.relP50 <= 0 || s.relP99 < s.relP50 || s.cmdsPer <= 0 || s.selfUS <= 0 {
			t.Errorf("%s: not measured: %+v", name, s)
		}
		if s.pairs.failed != 0 {
			t.Errorf("%s: %d acquires or releases failed", name, s.pairs.failed)
		}
	}
	md := res.markdown()
	for _, want := range []string{"| EVALSHA compare-and-delete (recognised: native) |", "| EVALSHA redis-semaphore release (replicated) |",
		"| UNLOCK key token |", "**Machine:**", "release p50"} {
		if !strings.Contains(md, want) {
			t.Errorf("release results lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("release results hold a NaN or Inf:\n%s", md)
	}
}

// TestEmbeddedSmoke runs the -embedded mode end to end: every workload of
// both binaries must complete, no pair may fail, the table must hold
// every row, and the first binary must have written its CPU profile.
func TestEmbeddedSmoke(t *testing.T) {
	bin, err := buildRedlockd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	o, err := parseFlags([]string{"-smoke", "-embedded", "-redlockd", bin, "-baseline", bin, "-cpuprofile", profile})
	if err != nil {
		t.Fatal(err)
	}
	o.nodeTimeout = 2 * time.Second
	var log strings.Builder
	res, err := runEmbedded(t.Context(), o, &log)
	if err != nil {
		t.Fatalf("embedded run: %v\n%s", err, log.String())
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile of redlockd: %v", err)
	}
	for b, name := range res.bins {
		for i, row := range res.rows {
			if s := res.set[b][i]; s.done != o.reps || s.rps <= 0 || s.selfUS <= 0 {
				t.Errorf("%s %s -c %d: not measured: %+v\n%s", name, row.name, row.clients, s, log.String())
			}
		}
		if p := res.pairs[b]; p.perSec <= 0 || p.failed != 0 || res.pairUS[b] <= 0 {
			t.Errorf("%s pairs: %+v, %.2f µs per pair", name, p, res.pairUS[b])
		}
	}
	md := res.markdown()
	for _, want := range []string{"### Embedded mode", "| SET NX PX, -c 1 |", "| EVAL, -c 50 |", "| lock+unlock pairs/s, 50 goroutines |",
		"baseline: requests/s", "**Machine:**"} {
		if !strings.Contains(md, want) {
			t.Errorf("embedded results lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("embedded results hold a NaN or Inf:\n%s", md)
	}
}

// TestLockoptsSmoke runs the -lockopts mode end to end: every LOCK form of
// both binaries, with and without pipelining, must complete and be
// measured, and the table must hold every row.
func TestLockoptsSmoke(t *testing.T) {
	bin, err := buildRedlockd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-smoke", "-lockopts", "-redlockd", bin, "-baseline", bin, "-lockopts-requests", "4000"})
	if err != nil {
		t.Fatal(err)
	}
	o.nodeTimeout = 2 * time.Second
	var log strings.Builder
	res, err := runLockopts(t.Context(), o, &log)
	if err != nil {
		t.Fatalf("lockopts run: %v\n%s", err, log.String())
	}
	for b, name := range res.bins {
		for c, s := range res.sums[b] {
			if s.done != o.reps || s.rps <= 0 || s.selfUS <= 0 {
				t.Errorf("%s cell %d: not measured: %+v\n%s", name, c, s, log.String())
			}
		}
	}
	md := res.markdown()
	for _, want := range []string{"### LOCK with its options", "| LOCK … FENCE |", "| LOCK … WAIT 10 |",
		"baseline -P 16: requests/s", "**Machine:**"} {
		if !strings.Contains(md, want) {
			t.Errorf("lockopts results lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("lockopts results hold a NaN or Inf:\n%s", md)
	}
}
