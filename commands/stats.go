package commands

import (
	"sync"
	"sync/atomic"
	"time"
)

// stats are the counters INFO reports that the handler keeps itself. The
// lock counters are not among them: they are the quorum operations'
// record, kept by the InfoSource (see infoStats).
type stats struct {
	commands atomic.Int64
	// blocked counts the commands waiting now (LOCK … WAIT): INFO's
	// blocked_clients.
	blocked atomic.Int64

	rate rateSample
}

// rateSample is INFO's instantaneous_ops_per_sec: commands per second
// between two INFO calls at least a second apart (Redis samples on a
// timer; redlockd keeps no timer, so a tool that polls INFO, as
// redis-cli --stat does, sees the rate over its own interval).
type rateSample struct {
	mu     sync.Mutex
	at     time.Time
	n      int64
	perSec int64
}

// opsPerSec takes the sample n commands at now and returns the rate.
func (st *stats) opsPerSec(n int64, now time.Time) int64 {
	r := &st.rate
	r.mu.Lock()
	defer r.mu.Unlock()
	switch el := now.Sub(r.at); {
	case r.at.IsZero():
		r.at, r.n = now, n
	case el >= time.Second:
		r.perSec = int64(float64(n-r.n) / el.Seconds())
		r.at, r.n = now, n
	}
	return r.perSec
}
