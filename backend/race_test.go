//go:build race

package backend

// The race detector allocates on its own, and drops some of what a pool
// is given: allocation budgets are checked without it.
const raceEnabled = true
