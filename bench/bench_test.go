package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redlockd/redlockd/internal/leaktest"
)

// TestMain doubles as the redlockd child: the smoke run re-executes this
// test binary in serve mode, as `go -C bench run .` re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(envServe) != "" {
		if err := serveChild(); err != nil {
			os.Stderr.WriteString("bench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	leaktest.VerifyTestMain(m)
}

// TestSmoke runs the benchmark's smoke mode end to end, so that it cannot
// rot: every workload must complete and produce sane numbers. Speed is not
// asserted; that is what the benchmark itself reports.
func TestSmoke(t *testing.T) {
	o, err := parseFlags([]string{"-smoke"})
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
	checks := []struct {
		name string
		ok   bool
	}{
		{"direct -c", res.direct.c50 > 0},
		{"direct -P", res.direct.p16 > 0},
		{"redlockd -c", res.proxy[3].c50 > 0},
		{"redlockd -P", res.proxy[3].p16 > 0},
		{"redsync pairs", res.redsync[3].pairs > 0 && res.redsync[3].p50 > 0 && res.redsync[3].p99 >= res.redsync[3].p50},
		{"redlockd pairs", res.redlockd[3].pairs > 0 && res.redlockd[3].p50 > 0 && res.redlockd[3].p99 >= res.redlockd[3].p50},
		{"rss", res.rssIdle > 0 && res.rssBefore > 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not measured\n%s", c.name, log.String())
		}
	}
	md := res.markdown()
	for _, want := range []string{"**Machine:**", "| -c 50 |", "| -c 50 -P 16 |", "| 3 |", "idle clients"} {
		if !strings.Contains(md, want) {
			t.Errorf("results lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("results hold a NaN or Inf:\n%s", md)
	}
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
