//go:build race

package commands

// Under the race detector sync.Pool drops items at random, so pooled
// records are sometimes made anew: allocations are not counted then.
const raceEnabled = true
