// Command bench measures redlockd side by side with what it replaces, in
// one run on one machine: redis-benchmark's SET NX PX against one
// redis-server directly and through redlockd; lock+unlock pairs of
// go-redsync against the backends and of a go-redis client through
// redlockd; and redlockd's memory with 10,000 idle clients. It starts its
// own redis-servers (redis-server and redis-benchmark must be on PATH) and
// runs redlockd as a child process of itself.
//
//	go -C bench run .         # N = 3, 5, 7; writes bench/RESULTS.md
//	go -C bench run . -smoke  # seconds: N = 3, tiny counts, no file
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

type options struct {
	ns         []int
	requests   int // per redis-benchmark run
	pairsFor   time.Duration
	workers    int
	idle       int
	out        string // "" = print only
	cpuProfile string // CPU profile of redlockd during the N=3 runs
	// nodeTimeout is redlockd's --node-timeout (default 50ms, as shipped).
	nodeTimeout time.Duration
	// retryTimeout reruns a redis-benchmark run that a NOQUORUM aborted
	// (0: no rerun).
	retryTimeout time.Duration
}

func main() {
	if os.Getenv(envServe) != "" {
		if err := serveChild(); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if o.out != "" {
		old, _ := os.ReadFile(o.out)
		text := res.markdown() + keptNotes(string(old))
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", o.out)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "a run of seconds: N=3 only, tiny counts, no results file")
	fs.BoolVar(smoke, "short", false, "same as -smoke")
	ns := fs.String("n", "3,5,7", "backend counts to measure")
	var o options
	fs.IntVar(&o.requests, "requests", 200000, "requests per redis-benchmark run")
	fs.DurationVar(&o.pairsFor, "pairs-for", 5*time.Second, "duration of each lock+unlock run")
	fs.IntVar(&o.workers, "workers", 50, "client connections / goroutines")
	fs.IntVar(&o.idle, "idle", 10000, "idle client connections for the memory run")
	fs.StringVar(&o.out, "out", "RESULTS.md", "results file, relative to bench/ (empty: none)")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 50*time.Millisecond, "redlockd's --node-timeout")
	fs.DurationVar(&o.retryTimeout, "retry-node-timeout", 500*time.Millisecond,
		"rerun a redis-benchmark run that a NOQUORUM aborted with this node timeout (go-redsync's per-node timeout for a 10s expiry); 0: no rerun")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of redlockd during the N=3 runs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *smoke {
		*ns, o.requests, o.pairsFor, o.idle, o.out = "3", 2000, 300*time.Millisecond, 200, ""
	}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return o, fmt.Errorf("bad -n %q", *ns)
		}
		o.ns = append(o.ns, n)
	}
	return o, nil
}
