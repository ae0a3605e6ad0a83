// Command bench measures redlockd side by side with what it replaces, in
// one run on one machine: redis-benchmark's SET NX PX against one
// redis-server directly and through redlockd, with the CPU each process
// spent per request; lock+unlock pairs of go-redsync against the backends
// and of a go-redis client through redlockd; and redlockd's memory with
// 10,000 idle clients. It starts its own redis-servers (redis-server and
// redis-benchmark must be on PATH), builds ./cmd/redlockd and runs the
// binary as a child process with its real flags. Every measurement is
// repeated, interleaved with the others, and the medians are reported.
//
//	go -C bench run .                      # N = 3, 5; writes bench/RESULTS.md
//	go -C bench run . -smoke               # seconds: N = 3, tiny counts, no file
//	go -C bench run . -baseline OLD_BINARY # OLD_BINARY measured alongside
//	go -C bench run . -release             # the three releases at N = 3, printed
//	go -C bench run . -cluster             # N = 3 single servers vs 3 clusters, printed
//	go -C bench run . -embedded            # embedded mode: SET NX PX, EVAL, pairs, printed
//	go -C bench run . -lockopts            # LOCK with its options at N = 3, printed
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type options struct {
	ns                []int
	requests          int // per redis-benchmark run without pipelining
	pipelinedRequests int // per redis-benchmark run with -P 16
	reps              int // interleaved repetitions of every run
	pairsFor          time.Duration
	workers           int
	idle              int
	out               string // "" = print only
	cpuProfile        string // CPU profile of redlockd during the N=3 runs
	// nodeTimeout is redlockd's --node-timeout (default 50ms, as shipped).
	nodeTimeout time.Duration
	// retryTimeout reruns a redis-benchmark run that a NOQUORUM aborted
	// (0: no rerun).
	retryTimeout time.Duration
	// redlockd is a prebuilt binary to measure ("": build ./cmd/redlockd);
	// baseline, when set, is a second one measured alongside.
	redlockd, baseline string
	// release runs only the comparison of release commands (release.go)
	// and prints it: it writes no results file.
	release bool
	// cluster runs only the comparison of N=3 single servers with N=3
	// Redis Clusters (cluster.go) and prints it: it writes no results file.
	cluster bool
	// embedded runs only the measures of embedded mode (embedded.go)
	// and prints them: it writes no results file.
	embedded         bool
	embeddedRequests int // per redis-benchmark run of -embedded
	// lockopts runs only the measures of LOCK's options (lockopts.go)
	// and prints them: it writes no results file.
	lockopts         bool
	lockoptsRequests int // per redis-benchmark run of -lockopts without pipelining
}

func main() {
	serveFloorIfAsked()
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if o.cluster {
		if err := runCluster(ctx, o, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.embedded {
		res, err := runEmbedded(ctx, o, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Print(res.markdown())
		return
	}
	if o.lockopts {
		res, err := runLockopts(ctx, o, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Print(res.markdown())
		return
	}
	if o.release {
		res, err := runRelease(ctx, o, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Print(res.markdown())
		return
	}
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

// flagSet reports whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "a run of seconds: N=3 only, tiny counts, no results file")
	fs.BoolVar(smoke, "short", false, "same as -smoke")
	ns := fs.String("n", "3,5", "backend counts to measure")
	var o options
	// The counts make the direct server spend well over 100 clock ticks of
	// CPU per run, so that reading CPU in ticks is off by under 2%.
	fs.IntVar(&o.requests, "requests", 300000, "requests per redis-benchmark run without pipelining")
	fs.IntVar(&o.pipelinedRequests, "pipelined-requests", 1200000, "requests per redis-benchmark run with -P 16")
	fs.IntVar(&o.reps, "reps", 3, "interleaved repetitions of every run; the median is reported")
	fs.DurationVar(&o.pairsFor, "pairs-for", 5*time.Second, "duration of each lock+unlock run")
	fs.IntVar(&o.workers, "workers", 50, "client connections / goroutines")
	fs.IntVar(&o.idle, "idle", 10000, "idle client connections for the memory run")
	fs.StringVar(&o.out, "out", "RESULTS.md", "results file, relative to bench/ (empty: none)")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 50*time.Millisecond, "redlockd's --node-timeout")
	fs.DurationVar(&o.retryTimeout, "retry-node-timeout", 500*time.Millisecond,
		"rerun a redis-benchmark run that a NOQUORUM aborted with this node timeout (go-redsync's per-node timeout for a 10s expiry); 0: no rerun")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of redlockd during the runs at the first N (with -embedded: of the whole run)")
	fs.StringVar(&o.redlockd, "redlockd", "", "redlockd binary to measure (default: build ./cmd/redlockd)")
	fs.StringVar(&o.baseline, "baseline", "", "a second redlockd binary (an older build) measured in the same run, interleaved")
	fs.BoolVar(&o.release, "release", false,
		"only compare lock+release pairs released by the recognised compare-and-delete script, an unrecognised one (replicated) and UNLOCK, at the first -n; prints, writes no file")
	fs.BoolVar(&o.cluster, "cluster", false,
		"only compare redlockd over N=3 single servers with redlockd over N=3 Redis Clusters of 3 masters (cluster://); prints, writes no file")
	fs.BoolVar(&o.embedded, "embedded", false,
		"only measure embedded mode (no backends): SET NX PX and a client script's EVAL at -c 1, 10 and -workers, and lock+unlock pairs; prints, writes no file")
	fs.IntVar(&o.embeddedRequests, "embedded-requests", 50000, "requests per redis-benchmark run of -embedded")
	fs.BoolVar(&o.lockopts, "lockopts", false,
		"only compare LOCK with FENCE, OWNER, PERMITS, SHARED and WAIT at N=3, without pipelining and with -P 16; prints, writes no file")
	fs.IntVar(&o.lockoptsRequests, "lockopts-requests", 60000, "requests per redis-benchmark run of -lockopts without pipelining (4× with -P 16)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *smoke {
		*ns, o.requests, o.pipelinedRequests, o.pairsFor, o.idle, o.out = "3", 2000, 8000, 300*time.Millisecond, 200, ""
		o.embeddedRequests = 1000
		if !flagSet(fs, "lockopts-requests") {
			o.lockoptsRequests = 1000
		}
	}
	if o.reps < 1 || o.requests < 1 || o.pipelinedRequests < 1 || o.embeddedRequests < 1 || o.lockoptsRequests < 1 {
		return o, fmt.Errorf("-reps, -requests, -pipelined-requests, -embedded-requests and -lockopts-requests must be positive")
	}
	// A bare name would be looked up on PATH; these are files.
	for _, p := range []*string{&o.redlockd, &o.baseline, &o.cpuProfile} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return o, err
			}
			*p = abs
		}
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
