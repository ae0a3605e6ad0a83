package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// results is everything one run measured.
type results struct {
	machine   machine
	opts      options
	direct    setNX         // one redis-server, no proxy
	proxy     map[int]setNX // by N
	redsync   map[int]pairResult
	redlockd  map[int]pairResult
	idle      int
	rssBefore int64 // redlockd (N=3) before the idle clients connect
	rssIdle   int64 // … and with them connected
}

// setNX is redis-benchmark's requests/s with -c workers, and with -P 16,
// with the runs' latencies.
type setNX struct {
	c50, p16       float64
	c50Run, p16Run benchRun
	// c50Retry and p16Retry rerun an aborted run with the retry node
	// timeout (go-redsync's per-node timeout), so that a figure exists.
	c50Retry, p16Retry benchRun
}

const pipelineDepth = 16

func run(ctx context.Context, o options, log io.Writer) (*results, error) {
	if lim, err := raiseNoFile(); err != nil || lim < uint64(o.idle)+1000 {
		return nil, fmt.Errorf("open-file limit %d too low for %d idle connections: %v", lim, o.idle, err)
	}
	dir, err := os.MkdirTemp("", "redlockd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &results{machine: describeMachine(), opts: o, proxy: map[int]setNX{},
		redsync: map[int]pairResult{}, redlockd: map[int]pairResult{}, idle: o.idle}
	fmt.Fprintln(log, res.machine.String())
	if res.direct, err = measureDirect(ctx, o, dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "redis-server direct: %s\n", res.direct.describe(o.workers))
	for i, n := range o.ns {
		if err := measureN(ctx, o, dir, n, i == 0, res, log); err != nil {
			return nil, fmt.Errorf("measuring N=%d: %w", n, err)
		}
	}
	res.print(log)
	return res, nil
}

func measureDirect(ctx context.Context, o options, dir string) (setNX, error) {
	p, err := startRedis(mkdir(dir, "direct"))
	if err != nil {
		return setNX{}, err
	}
	defer p.stop()
	return measureSetNX(ctx, o, p.addr, []string{p.addr}, false)
}

// measureSetNX runs both redis-benchmark workloads. Through redlockd
// (tolerate) a run that redis-benchmark aborted is recorded as such and the
// benchmark goes on; against redis-server it is a broken setup.
func measureSetNX(ctx context.Context, o options, addr string, flush []string, tolerate bool) (setNX, error) {
	var r setNX
	for _, run := range []struct {
		dst      *benchRun
		pipeline int
		n        int
	}{{&r.c50Run, 1, o.requests}, {&r.p16Run, pipelineDepth, o.requests * 4}} {
		if err := flushAll(ctx, flush); err != nil {
			return r, err
		}
		var err error
		*run.dst, err = redisBenchmark(ctx, addr, o.workers, run.pipeline, run.n)
		if err != nil && (!tolerate || run.dst.aborted == "" || ctx.Err() != nil) {
			return r, err
		}
	}
	r.c50, r.p16 = r.c50Run.rps, r.p16Run.rps
	return r, nil
}

// measureN starts n backends and redlockd over them, and runs every
// workload that depends on n; first also gets the memory run.
func measureN(ctx context.Context, o options, dir string, n int, first bool, res *results, log io.Writer) error {
	var addrs []string
	for i := range n {
		p, err := startRedis(mkdir(dir, fmt.Sprintf("n%d-%d", n, i)))
		if err != nil {
			return err
		}
		defer p.stop()
		addrs = append(addrs, p.addr)
	}
	profile := ""
	if first {
		profile = o.cpuProfile
	}
	px, err := startProxy(addrs, profile, o.nodeTimeout)
	if err != nil {
		return err
	}
	defer px.stop()
	s, err := measureSetNX(ctx, o, px.addr, addrs, true)
	if err != nil {
		return err
	}
	if err := retryAborted(ctx, o, addrs, &s); err != nil {
		return err
	}
	res.proxy[n] = s
	fmt.Fprintf(log, "redlockd N=%d: %s\n", n, s.describe(o.workers))
	if err := measurePairs(ctx, o, n, addrs, px.addr, res, log); err != nil {
		return err
	}
	if first {
		return measureIdle(ctx, o, px, res, log)
	}
	return nil
}

// measurePairs runs go-redsync and redlockd one after the other on the
// same backends, with a flush between.
func measurePairs(ctx context.Context, o options, n int, addrs []string, proxyAddr string, res *results, log io.Writer) error {
	if err := flushAll(ctx, addrs); err != nil {
		return err
	}
	rs := newRedsyncLocker(addrs, o.workers)
	r, err := runPairs(ctx, rs, o.workers, o.pairsFor, "rs:")
	rs.close()
	if err != nil {
		return fmt.Errorf("go-redsync: %w", err)
	}
	res.redsync[n] = r
	if err := flushAll(ctx, addrs); err != nil {
		return err
	}
	pl := newProxyLocker(proxyAddr, o.workers)
	r2, err := runPairs(ctx, pl, o.workers, o.pairsFor, "rl:")
	pl.close()
	if err != nil {
		return fmt.Errorf("redlockd: %w", err)
	}
	res.redlockd[n] = r2
	fmt.Fprintf(log, "N=%d lock+unlock: go-redsync %.0f pairs/s (p50 %v p99 %v), redlockd %.0f pairs/s (p50 %v p99 %v)\n",
		n, r.perSec(), r.p50, r.p99, r2.perSec(), r2.p50, r2.p99)
	return nil
}

func measureIdle(ctx context.Context, o options, px *proxyProc, res *results, log io.Writer) error {
	runtime.GC()
	var err error
	if res.rssBefore, err = rssBytes(px.cmd.Process.Pid); err != nil {
		return err
	}
	conns, err := idleConns(ctx, px.addr, o.idle)
	if err != nil {
		return fmt.Errorf("idle connections: %w", err)
	}
	defer closeAll(conns)
	if res.rssIdle, err = rssBytes(px.cmd.Process.Pid); err != nil {
		return err
	}
	fmt.Fprintf(log, "redlockd RSS: %.1f MB before, %.1f MB with %d idle clients\n",
		mb(res.rssBefore), mb(res.rssIdle), o.idle)
	return nil
}

func mkdir(dir, name string) string {
	d := filepath.Join(dir, name)
	_ = os.MkdirAll(d, 0o755)
	return d
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

func (s setNX) describe(workers int) string {
	return fmt.Sprintf("-c %d %s; -c %d -P %d %s", workers, describeRetry(s.c50Run, s.c50Retry),
		workers, pipelineDepth, describeRetry(s.p16Run, s.p16Retry))
}

func describeRetry(run, retry benchRun) string {
	if run.aborted != "" && (retry.rps > 0 || retry.aborted != "") {
		return run.describe() + "; with the retry node timeout: " + retry.describe()
	}
	return run.describe()
}

func (b benchRun) describe() string {
	if b.aborted != "" {
		return "aborted: " + b.aborted
	}
	return fmt.Sprintf("%.0f req/s (p50 %.2f p99 %.2f max %.2f ms)", b.rps, b.p50, b.p99, b.max)
}

// retryAborted reruns, through a redlockd with o.retryTimeout, the
// redis-benchmark runs that aborted at the configured node timeout.
func retryAborted(ctx context.Context, o options, addrs []string, s *setNX) error {
	if o.retryTimeout <= 0 || (s.c50Run.aborted == "" && s.p16Run.aborted == "") {
		return nil
	}
	px, err := startProxy(addrs, "", o.retryTimeout)
	if err != nil {
		return err
	}
	defer px.stop()
	r, err := measureSetNX(ctx, o, px.addr, addrs, true)
	if err != nil {
		return err
	}
	if s.c50Run.aborted != "" {
		s.c50Retry, s.c50 = r.c50Run, r.c50
	}
	if s.p16Run.aborted != "" {
		s.p16Retry, s.p16 = r.p16Run, r.p16
	}
	return nil
}
