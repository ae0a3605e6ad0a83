//go:build !race

// Package raceflag tells tests whether they run under the race detector,
// which allocates on its own and drops some of what a sync.Pool is given:
// allocation budgets are checked without it.
package raceflag

// Enabled: the race detector is on.
const Enabled = false
