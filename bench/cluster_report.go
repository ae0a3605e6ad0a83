package main

import (
	"context"
	"fmt"
	"strings"
)

// clusterSetNX runs both redis-benchmark workloads o.reps times through
// each side, interleaved, and returns the medians per side.
func clusterSetNX(ctx context.Context, o options, sides []*clusterTarget) ([][2]summary, error) {
	ws := workloads(o)
	samples := make([][2][]sample, len(sides))
	err := interleave(o.reps, 2*len(sides), func(rep, i int) error {
		w, t := i/len(sides), i%len(sides)
		s, err := sides[t].target().measure(ctx, ws[w])
		if err != nil && (s.run.aborted == "" || ctx.Err() != nil) {
			return fmt.Errorf("%s: %w", sides[t].name, err)
		}
		samples[t][w] = append(samples[t][w], s)
		return nil
	})
	out := make([][2]summary, len(sides))
	for t := range sides {
		for w := range 2 {
			out[t][w] = summarize(samples[t][w], clockTicks())
		}
	}
	return out, err
}

// clusterPairs runs go-redis lock+unlock pairs through each side o.reps
// times, interleaved.
func clusterPairs(ctx context.Context, o options, sides []*clusterTarget) ([]pairSummary, error) {
	all := make([][]pairResult, len(sides))
	err := interleave(o.reps, len(sides), func(rep, i int) error {
		if err := flushAll(ctx, sides[i].target().servers); err != nil {
			return err
		}
		l := newProxyLocker(sides[i].proxy.addr, o.workers)
		r, err := runPairs(ctx, l, o.workers, o.pairsFor, "rl:")
		l.close()
		if err != nil {
			return fmt.Errorf("%s: %w", sides[i].name, err)
		}
		all[i] = append(all[i], r)
		return nil
	})
	out := make([]pairSummary, len(sides))
	for i := range sides {
		out[i] = summarizePairs(all[i])
	}
	return out, err
}

// clusterMarkdown is the comparison's tables.
func clusterMarkdown(o options, sides []*clusterTarget, set [][2]summary, pairs []pairSummary, _ int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### redlockd over N=3 single servers vs N=3 clusters of %d masters (median of %d, one machine, node timeout %v)\n\n",
		clusterShards, o.reps, o.nodeTimeout)
	b.WriteString("| measure | " + sides[0].name + " | " + sides[1].name + " | clusters / single |\n|---|---|---|---|\n")
	for w := range 2 {
		s0, s1 := set[0][w], set[1][w]
		for i, s := range []summary{s0, s1} {
			if s.aborted > 0 {
				fmt.Fprintf(&b, "| %s, %s: runs aborted by an error reply | %d of %d: %s | | |\n",
					sides[i].name, workloadName(o, w), s.aborted, s.aborted+s.done, s.reason)
			}
		}
		fmt.Fprintf(&b, "| SET NX PX, %s: requests/s (p99) | %.0f (%.1f ms) | %.0f (%.1f ms) | %.2f |\n",
			workloadName(o, w), s0.rps, s0.p99, s1.rps, s1.p99, s1.rps/s0.rps)
		fmt.Fprintf(&b, "| same: redlockd CPU µs per request | %.2f | %.2f | %.2f |\n", s0.selfUS, s1.selfUS, s1.selfUS/s0.selfUS)
		fmt.Fprintf(&b, "| same: backends' CPU µs per request, all servers together | %.2f | %.2f | %.2f |\n",
			s0.backendsUS, s1.backendsUS, s1.backendsUS/s0.backendsUS)
	}
	p0, p1 := pairs[0], pairs[1]
	fmt.Fprintf(&b, "| lock+unlock pairs/s, %d goroutines (p99 of the acquires) | %.0f (%s) | %.0f (%s) | %.2f |\n",
		o.workers, p0.perSec, ms(p0.p99), p1.perSec, ms(p1.p99), p1.perSec/p0.perSec)
	return b.String()
}
