package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// nRun measures everything at one backend count: the binaries over the
// same n redis-servers, and at the first count the direct server too.
type nRun struct {
	o        options
	dir      string
	n        int
	first    bool
	bins     []binary
	res      *results
	log      io.Writer
	backends []*redisProc
	addrs    []string
	proxies  []*proxyProc
	retries  []*proxyProc // started on the first aborted run, per binary
}

func (m *nRun) measure(ctx context.Context) error {
	defer m.stop()
	if err := m.start(); err != nil {
		return err
	}
	if err := m.setNX(ctx); err != nil {
		return err
	}
	if err := m.lockPairs(ctx); err != nil {
		return err
	}
	if m.first {
		return m.idleMemory(ctx)
	}
	return nil
}

func (m *nRun) start() error {
	for i := range m.n {
		p, err := startRedis(mkdir(m.dir, fmt.Sprintf("n%d-%d", m.n, i)))
		if err != nil {
			return err
		}
		m.backends = append(m.backends, p)
		m.addrs = append(m.addrs, p.addr)
	}
	m.retries = make([]*proxyProc, len(m.bins))
	for i, b := range m.bins {
		args := []string{"--node-timeout", m.o.nodeTimeout.String()}
		if m.first && i == 0 && m.o.cpuProfile != "" {
			args = append(args, "--cpuprofile", m.o.cpuProfile)
		}
		px, err := startProxy(b.path, m.addrs, args...)
		if err != nil {
			return err
		}
		m.proxies = append(m.proxies, px)
	}
	return nil
}

// stop ends the proxies before their backends.
func (m *nRun) stop() {
	for _, px := range append(m.proxies, m.retries...) {
		if px != nil {
			px.stop()
		}
	}
	for _, p := range m.backends {
		p.stop()
	}
}

func (m *nRun) proxyTarget(px *proxyProc) target {
	return target{addr: px.addr, pid: px.pid(), backends: m.backends, servers: m.addrs}
}

// setNX runs both redis-benchmark workloads o.reps times, interleaving
// the direct server (at the first N) and the binaries: for each workload
// direct, redlockd, baseline, direct, redlockd, ….
func (m *nRun) setNX(ctx context.Context) error {
	var targets []target
	names := []string{}
	if m.first {
		d, err := startRedis(mkdir(m.dir, "direct"))
		if err != nil {
			return err
		}
		defer d.stop()
		targets = append(targets, target{addr: d.addr, pid: d.pid(), servers: []string{d.addr}})
		names = append(names, "direct")
		at, an, stop, err := m.anchors()
		if err != nil {
			return err
		}
		defer stop()
		targets, names = append(targets, at...), append(names, an...)
	}
	for i, px := range m.proxies {
		targets = append(targets, m.proxyTarget(px))
		names = append(names, m.bins[i].name)
	}
	ws := workloads(m.o)
	samples := make([][2][]sample, len(targets))
	retried := make([][2][]sample, len(targets))
	err := interleave(m.o.reps, 2*len(targets), func(rep, i int) error {
		w, t := i/len(targets), i%len(targets)
		s, err := targets[t].measure(ctx, ws[w])
		if err != nil && (names[t] == "direct" || s.run.aborted == "" || ctx.Err() != nil) {
			return fmt.Errorf("%s: %w", names[t], err)
		}
		samples[t][w] = append(samples[t][w], s)
		// Only the binaries under test, the last targets, are rerun.
		if s.run.aborted == "" || m.o.retryTimeout <= 0 || t < len(targets)-len(m.bins) {
			return nil
		}
		r, err := m.retry(ctx, t-len(targets)+len(m.bins), ws[w])
		retried[t][w] = append(retried[t][w], r)
		return err
	})
	if err != nil {
		return err
	}
	m.record(names, samples, retried)
	return nil
}

// retry reruns an aborted workload through binary b started with the
// retry node timeout, so that a figure exists.
func (m *nRun) retry(ctx context.Context, b int, w workload) (sample, error) {
	if m.retries[b] == nil {
		px, err := startProxy(m.bins[b].path, m.addrs, "--node-timeout", m.o.retryTimeout.String())
		if err != nil {
			return sample{}, err
		}
		m.retries[b] = px
	}
	s, err := m.proxyTarget(m.retries[b]).measure(ctx, w)
	if err != nil && (s.run.aborted == "" || ctx.Err() != nil) {
		return s, fmt.Errorf("%s at %v: %w", m.bins[b].name, m.o.retryTimeout, err)
	}
	return s, nil
}

func (m *nRun) record(names []string, samples, retried [][2][]sample) {
	for t, name := range names {
		var sum, re [2]summary
		for w := range 2 {
			sum[w] = summarize(samples[t][w], m.res.ticksPerSec)
			re[w] = summarize(retried[t][w], m.res.ticksPerSec)
		}
		if name == "direct" {
			m.res.direct = sum
			fmt.Fprintf(m.log, "redis-server direct: %s\n", describe(m.o, sum, re))
			continue
		}
		if name == anchorTwemproxy || name == anchorGoFloor || name == anchorEpollFloor || name == anchorRedlockd1 {
			m.res.anchors[name] = sum
			fmt.Fprintf(m.log, "%s: %s\n", name, describe(m.o, sum, re))
			continue
		}
		k := runKey{name, m.n}
		m.res.proxy[k], m.res.retry[k] = sum, re
		fmt.Fprintf(m.log, "%s N=%d: %s\n", name, m.n, describe(m.o, sum, re))
	}
}

// lockPairs runs go-redsync and each binary's lock+unlock pairs o.reps
// times, interleaved, with a flush before each run.
func (m *nRun) lockPairs(ctx context.Context) error {
	all := make([][]pairResult, 1+len(m.bins))
	err := interleave(m.o.reps, len(all), func(rep, i int) error {
		if err := flushAll(ctx, m.addrs); err != nil {
			return err
		}
		var l interface {
			locker
			close()
		}
		prefix, name := "rl:", "redlockd"
		if i == 0 {
			l, prefix, name = newRedsyncLocker(m.addrs, m.o.workers), "rs:", "go-redsync"
		} else {
			l, name = newProxyLocker(m.proxies[i-1].addr, m.o.workers), m.bins[i-1].name
		}
		r, err := runPairs(ctx, l, m.o.workers, m.o.pairsFor, prefix)
		l.close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		all[i] = append(all[i], r)
		return nil
	})
	if err != nil {
		return err
	}
	m.res.redsync[m.n] = summarizePairs(all[0])
	fmt.Fprintf(m.log, "N=%d lock+unlock: go-redsync %s", m.n, m.res.redsync[m.n].describe())
	for i, b := range m.bins {
		m.res.pairs[runKey{b.name, m.n}] = summarizePairs(all[i+1])
		fmt.Fprintf(m.log, ", %s %s", b.name, m.res.pairs[runKey{b.name, m.n}].describe())
	}
	fmt.Fprintln(m.log)
	return nil
}

// idleMemory reads each binary's RSS, then again with o.idle clients
// connected to it.
func (m *nRun) idleMemory(ctx context.Context) error {
	for i, px := range m.proxies {
		var f rssFigures
		var err error
		if f.before, err = rssBytes(px.pid()); err != nil {
			return err
		}
		conns, err := idleConns(ctx, px.addr, m.o.idle)
		if err != nil {
			return fmt.Errorf("%s: idle connections: %w", m.bins[i].name, err)
		}
		f.idle, err = rssBytes(px.pid())
		closeAll(conns)
		if err != nil {
			return err
		}
		m.res.rss[m.bins[i].name] = f
		fmt.Fprintf(m.log, "%s RSS: %.1f MB before, %.1f MB with %d idle clients\n",
			m.bins[i].name, mb(f.before), mb(f.idle), m.o.idle)
	}
	return nil
}

// pairSummary is the median of each measure of the lock+unlock runs, and
// the failures of all of them.
type pairSummary struct {
	perSec   float64
	p50, p99 time.Duration
	failed   int
}

func summarizePairs(rs []pairResult) pairSummary {
	s := pairSummary{
		perSec: medianOf(rs, func(r pairResult) float64 { return r.perSec() }),
		p50:    time.Duration(medianOf(rs, func(r pairResult) float64 { return float64(r.p50) })),
		p99:    time.Duration(medianOf(rs, func(r pairResult) float64 { return float64(r.p99) })),
	}
	for _, r := range rs {
		s.failed += r.failed
	}
	return s
}

func (s pairSummary) describe() string {
	return fmt.Sprintf("%.0f pairs/s (p50 %v p99 %v)", s.perSec, ms(s.p50), ms(s.p99))
}

// describe is one target's medians for the log, as the run goes.
func describe(o options, s, retry [2]summary) string {
	var parts []string
	for w := range 2 {
		d := workloadName(o, w) + " " + s[w].describe()
		if retry[w].done+retry[w].aborted > 0 {
			d += fmt.Sprintf("; at %v: %s", o.retryTimeout, retry[w].describe())
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "; ")
}
