package commands

import "sync/atomic"

// stats are the counters INFO reports that the handler keeps itself. The
// lock counters are not among them: they are the quorum operations'
// record, kept by the InfoSource (see infoStats).
type stats struct {
	commands atomic.Int64
}
