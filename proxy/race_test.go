//go:build race

package proxy

// Under the race detector sync.Pool drops items at random, so pooled
// buffers are sometimes made anew: allocation budgets allow for that.
const raceEnabled = true
