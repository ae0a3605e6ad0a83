package main

import (
	"fmt"
	"slices"
)

// interleave calls step(rep, i) for every item i, in order, reps times:
// 0, 1, …, items-1, then again. Alternating the items spreads whatever
// else the machine does over all of them alike.
func interleave(reps, items int, step func(rep, i int) error) error {
	for rep := range reps {
		for i := range items {
			if err := step(rep, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2
	}
	return s[m]
}

// medianOf is the median of f over xs.
func medianOf[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return median(vs)
}

// sample is one redis-benchmark run against one target, with the CPU the
// target's processes used meanwhile.
type sample struct {
	run      benchRun
	requests int
	// self is the CPU of the process redis-benchmark talked to, backends
	// that of its backends summed (none for the direct server), in ticks.
	self, backends int64
	// at is what the servers that executed the SETs counted meanwhile:
	// the backends, or the direct server.
	at serverStats
	// sys is the system calls of the process redis-benchmark talked to,
	// when sysOK.
	sys   syscalls
	sysOK bool
}

// summary is the median of each measure over a run's repetitions that
// completed; aborted counts the others and keeps one's reason.
type summary struct {
	rps, p50, p99, max float64
	// selfUS and backendsUS are CPU µs per request; perRead is commands
	// per read event at the servers that executed them.
	selfUS, backendsUS, perRead float64
	done, aborted               int
	reason                      string
	// minTicks is the smallest tick count behind selfUS or backendsUS.
	minTicks int64
	// readsPer and writesPer are the system calls per request of the
	// process redis-benchmark talked to; -1 where they could not be read.
	readsPer, writesPer float64
}

func summarize(ss []sample, ticksPerSec int64) summary {
	var ok []sample
	var sum summary
	for _, s := range ss {
		if s.run.aborted != "" {
			sum.aborted++
			sum.reason = s.run.aborted
			continue
		}
		ok = append(ok, s)
	}
	sum.done = len(ok)
	if len(ok) == 0 {
		return sum
	}
	usPer := func(ticks int64, s sample) float64 {
		return float64(ticks) * 1e6 / float64(ticksPerSec) / float64(s.requests)
	}
	sum.rps = medianOf(ok, func(s sample) float64 { return s.run.rps })
	sum.p50 = medianOf(ok, func(s sample) float64 { return s.run.p50 })
	sum.p99 = medianOf(ok, func(s sample) float64 { return s.run.p99 })
	sum.max = medianOf(ok, func(s sample) float64 { return s.run.max })
	sum.selfUS = medianOf(ok, func(s sample) float64 { return usPer(s.self, s) })
	sum.backendsUS = medianOf(ok, func(s sample) float64 { return usPer(s.backends, s) })
	sum.perRead = medianOf(ok, func(s sample) float64 { return perRead(s.at) })
	sum.minTicks = minTicks(ok)
	sum.readsPer, sum.writesPer = -1, -1
	if !slices.ContainsFunc(ok, func(s sample) bool { return !s.sysOK }) {
		sum.readsPer = medianOf(ok, func(s sample) float64 { return float64(s.sys.reads) / float64(s.requests) })
		sum.writesPer = medianOf(ok, func(s sample) float64 { return float64(s.sys.writes) / float64(s.requests) })
	}
	return sum
}

func perRead(s serverStats) float64 {
	if s.reads <= 0 {
		return 0
	}
	return float64(s.commands) / float64(s.reads)
}

// minTicks is the smallest nonzero CPU count among the samples: the one
// whose ±2-tick reading error weighs most.
func minTicks(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		for _, t := range []int64{s.self, s.backends} {
			if t > 0 && (m == 0 || t < m) {
				m = t
			}
		}
	}
	return m
}

// tickError is the worst relative error of a CPU figure built on ticks:
// each of the two readings truncates utime and stime, so their difference
// is off by less than two ticks.
func tickError(ticks int64) string {
	if ticks <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 200/float64(ticks))
}

func (s summary) describe() string {
	d := ""
	if s.done > 0 {
		d = fmt.Sprintf("%.0f req/s (p50 %.2f p99 %.2f max %.2f ms), CPU %.2f µs/req (backends %.2f, %.1f commands per read)",
			s.rps, s.p50, s.p99, s.max, s.selfUS, s.backendsUS, s.perRead)
	}
	if s.aborted > 0 {
		d += fmt.Sprintf(" [%d of %d aborted: %s]", s.aborted, s.aborted+s.done, s.reason)
	}
	return d
}
