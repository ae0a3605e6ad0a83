package commands

import "sync/atomic"

// stats are the counters INFO reports.
type stats struct {
	commands  atomic.Int64
	acquired  atomic.Int64
	contended atomic.Int64
	noQuorum  atomic.Int64
	released  atomic.Int64
}
