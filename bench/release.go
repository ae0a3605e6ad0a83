package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The -release mode compares, over the same backends and one redlockd,
// three ways to release a lock taken with SET key token NX PX 10000: the
// compare-and-delete body redlockd recognises and runs as its native
// release, a body that does the same but is not recognised (so it is
// replicated to every backend with its undo record), and UNLOCK.

// semaphoreRelease is redis-semaphore 5.7's mutex release: the same
// compare-and-delete, in a body redlockd does not recognise.
var semaphoreRelease = redis.NewScript("local key = KEYS[1]\nlocal identifier = ARGV[1]\n" +
	"if redis.call('get', key) == identifier then\n  return redis.call('del', key)\nend\nreturn 0")

// releaseKind is one way of releasing: its name in the tables and the
// command, which answers 1 when it deleted the lock.
type releaseKind struct {
	name    string
	release func(ctx context.Context, c *redis.Client, key, tok string) (int64, error)
}

var releaseKinds = []releaseKind{
	{"EVALSHA compare-and-delete (recognised: native)", func(ctx context.Context, c *redis.Client, key, tok string) (int64, error) {
		return releaseScript.Run(ctx, c, []string{key}, tok).Int64()
	}},
	{"EVALSHA redis-semaphore release (replicated)", func(ctx context.Context, c *redis.Client, key, tok string) (int64, error) {
		return semaphoreRelease.Run(ctx, c, []string{key}, tok).Int64()
	}},
	{"UNLOCK key token", func(ctx context.Context, c *redis.Client, key, tok string) (int64, error) {
		return c.Do(ctx, "UNLOCK", key, tok).Int64()
	}},
}

// releaseLocker acquires with SET NX PX through redlockd and releases
// with one releaseKind.
type releaseLocker struct {
	c    *redis.Client
	kind releaseKind
}

func (l releaseLocker) lock(ctx context.Context, key string) (func() error, error) {
	tok := token()
	ok, err := l.c.SetNX(ctx, key, tok, 10*time.Second).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("not acquired")
	}
	return func() error {
		n, err := l.kind.release(ctx, l.c, key, tok)
		if err == nil && n != 1 {
			err = fmt.Errorf("%s deleted nothing", l.kind.name)
		}
		return err
	}, nil
}

// releaseSample is one pairs run of one kind, with the CPU redlockd and
// its backends spent meanwhile and what the backends counted.
type releaseSample struct {
	pairs          pairResult
	self, backends int64 // ticks
	at             serverStats
}

// releaseSummary is the medians of one kind's runs.
type releaseSummary struct {
	pairs      pairSummary
	relP50     time.Duration
	relP99     time.Duration
	selfUS     float64 // redlockd CPU per pair
	backendsUS float64 // the backends' CPU per pair, together
	cmdsPer    float64 // backend commands per pair, all backends
	minTicks   int64
}

// releaseResults is a -release run: one summary per releaseKinds entry.
type releaseResults struct {
	machine     machine
	opts        options
	n           int
	ticksPerSec int64
	kinds       []releaseSummary
}

// runRelease measures the release kinds at N = o.ns[0] over one redlockd,
// each o.reps times, interleaved, with a flush before each run.
func runRelease(ctx context.Context, o options, log io.Writer) (*releaseResults, error) {
	dir, err := os.MkdirTemp("", "redlockd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := o.redlockd
	if bin == "" {
		if bin, err = buildRedlockd(dir); err != nil {
			return nil, err
		}
	}
	res := &releaseResults{machine: describeMachine(), opts: o, n: o.ns[0], ticksPerSec: clockTicks()}
	fmt.Fprintln(log, res.machine.String())
	// first: with -cpuprofile, redlockd writes a profile of the whole run.
	m := &nRun{o: o, dir: dir, n: res.n, first: true, bins: []binary{{"redlockd", bin}}, log: log}
	defer m.stop()
	if err := m.start(); err != nil {
		return nil, err
	}
	t := m.proxyTarget(m.proxies[0])
	all := make([][]releaseSample, len(releaseKinds))
	err = interleave(o.reps, len(releaseKinds), func(rep, i int) error {
		s, err := measureRelease(ctx, t, o, releaseKinds[i], fmt.Sprintf("r%d:%d:", rep, i))
		if err != nil {
			return fmt.Errorf("%s: %w", releaseKinds[i].name, err)
		}
		all[i] = append(all[i], s)
		fmt.Fprintf(log, "%s: %s, release p50 %s p99 %s", releaseKinds[i].name, summarizePairs([]pairResult{s.pairs}).describe(), ms(s.pairs.relP50), ms(s.pairs.relP99))
		if s.pairs.failed > 0 {
			fmt.Fprintf(log, "; %d failed, e.g. %v", s.pairs.failed, s.pairs.lastErr)
		}
		fmt.Fprintln(log)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range releaseKinds {
		res.kinds = append(res.kinds, summarizeRelease(all[i], res.ticksPerSec))
	}
	return res, nil
}

// measureRelease runs one kind's pairs against t and reads the CPU of
// redlockd and its backends, and the backends' counters, around it.
func measureRelease(ctx context.Context, t target, o options, kind releaseKind, prefix string) (releaseSample, error) {
	if err := flushAll(ctx, t.servers); err != nil {
		return releaseSample{}, err
	}
	c := redis.NewClient(&redis.Options{Addr: t.addr, PoolSize: o.workers})
	defer c.Close()
	// The first EVALSHA of the replicated body answers NOSCRIPT and
	// go-redis sends EVAL: load it before the clock starts.
	if err := semaphoreRelease.Load(ctx, c).Err(); err != nil {
		return releaseSample{}, err
	}
	before, err := t.counters()
	if err != nil {
		return releaseSample{}, err
	}
	r, runErr := runPairs(ctx, releaseLocker{c, kind}, o.workers, o.pairsFor, prefix)
	after, err := t.counters()
	if err = errors.Join(runErr, err); err != nil {
		return releaseSample{}, err
	}
	return releaseSample{pairs: r, self: after.self - before.self, backends: after.backends - before.backends,
		at: after.at.minus(before.at)}, nil
}

func summarizeRelease(ss []releaseSample, ticksPerSec int64) releaseSummary {
	rs := make([]pairResult, len(ss))
	for i, s := range ss {
		rs[i] = s.pairs
	}
	usPer := func(ticks int64, s releaseSample) float64 {
		return float64(ticks) * 1e6 / float64(ticksPerSec) / float64(s.pairs.pairs)
	}
	sum := releaseSummary{
		pairs:      summarizePairs(rs),
		relP50:     time.Duration(medianOf(rs, func(r pairResult) float64 { return float64(r.relP50) })),
		relP99:     time.Duration(medianOf(rs, func(r pairResult) float64 { return float64(r.relP99) })),
		selfUS:     medianOf(ss, func(s releaseSample) float64 { return usPer(s.self, s) }),
		backendsUS: medianOf(ss, func(s releaseSample) float64 { return usPer(s.backends, s) }),
		cmdsPer:    medianOf(ss, func(s releaseSample) float64 { return float64(s.at.commands) / float64(s.pairs.pairs) }),
	}
	for _, s := range ss {
		for _, t := range []int64{s.self, s.backends} {
			if t > 0 && (sum.minTicks == 0 || t < sum.minTicks) {
				sum.minTicks = t
			}
		}
	}
	return sum
}

// markdown is the release comparison as a Markdown section.
func (r *releaseResults) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Release: native compare-and-delete, replicated script, UNLOCK (N=%d, %d goroutines, %v per run, median of %d)\n\n",
		r.n, r.opts.workers, r.opts.pairsFor, r.opts.reps)
	fmt.Fprintf(&b, "**Machine:** %s\n\n", r.machine)
	b.WriteString("| release | pairs/s | acquire p50 | p99 | release p50 | p99 | redlockd CPU per pair | backends' CPU per pair | backend commands per pair | failed |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for i, k := range releaseKinds {
		s := r.kinds[i]
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %.2f µs | %.2f µs | %.2f | %d |\n", k.name, s.pairs.perSec,
			ms(s.pairs.p50), ms(s.pairs.p99), ms(s.relP50), ms(s.relP99), s.selfUS, s.backendsUS, s.cmdsPer, s.pairs.failed)
	}
	least := int64(0)
	for _, s := range r.kinds {
		if s.minTicks > 0 && (least == 0 || s.minTicks < least) {
			least = s.minTicks
		}
	}
	fmt.Fprintf(&b, "\nEach pair is `SET key token NX PX 10000` then the release, from go-redis (one client, pool of %d).\n"+
		"CPU is utime+stime in ticks of 1/%d s over the pairs completed; the smallest count behind a figure was\n"+
		"%d ticks (error at most %s). Backend commands are `total_commands_processed` of the %d backends together.\n",
		r.opts.workers, r.ticksPerSec, least, tickError(least), r.n)
	return b.String()
}
