package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Config tunes a Cluster. Start from DefaultConfig.
type Config struct {
	// NodeTimeout bounds every call to one node (acquire, extend, release
	// and reads alike). It must be much smaller than any lock ttl.
	// Default 50ms.
	NodeTimeout time.Duration
	// DriftFactor is the clock drift allowance as a fraction of the ttl;
	// 2ms are always added on top. Default 0.01.
	DriftFactor float64
	// RetryDelayMin and RetryDelayMax bound the random pause between two
	// rounds of a blocking acquire. Defaults 5ms and 50ms.
	RetryDelayMin time.Duration
	RetryDelayMax time.Duration
	// Now reads the clock; validity is computed from differences of its
	// readings, so it must carry Go's monotonic reading. Default time.Now.
	Now func() time.Time
	// Observer, when set, is told of every node call and every quorum
	// operation (for metrics and logs). Default nil: nothing is reported.
	Observer Observer
	// RestartQuarantine is how long a node whose server restarted (its
	// run_id changed) sits out every vote, counted from when it came back:
	// it may have lost locks it granted, so it waits until they would have
	// expired (the "delayed restart" rule). QuarantineAuto (the default)
	// learns that time from the lock horizons of the other nodes (see
	// HorizonKey); a positive duration fixes it (keep it >= the largest
	// ttl); 0 turns it off.
	// A restart before this Cluster's first look counts too when the
	// node's uptime is below the quarantine (the MaxTTL cap under
	// QuarantineAuto) while another node has been up longer.
	// Only nodes that can identify their server are watched.
	RestartQuarantine time.Duration
	// Logger receives node state changes (restart, quarantine, refusal).
	// Default slog.Default().
	Logger *slog.Logger
	// ReleaseRetry is how often a release that a node did not answer (a
	// timeout, a reset connection, a stalled or dead server) is sent to it
	// again, until it answers or the key's ttl has passed; a failed
	// acquire's SET that timed out is checked the same way, since it may
	// land after the release. Default 200ms. 0 turns it off: such a
	// leftover then stays on its node (a minority) until its ttl ends.
	ReleaseRetry time.Duration
	// MaxTTL is the largest ttl a lock may have. A release that does not
	// know its lock's ttl is retried this long at most, and it caps the
	// lock horizon and QuarantineAuto. Default 24h (the binary passes
	// --max-ttl).
	MaxTTL time.Duration
	// SessionTTL is the ttl a replicated script's key gets where the
	// script leaves it without an expiry (Cmd.Limit of Eval), so that no
	// script can make a lock that never expires. Default 30s (the binary
	// passes --session-ttl).
	SessionTTL time.Duration
}

const defaultMaxTTL = 24 * time.Hour

// QuarantineAuto is the RestartQuarantine that lasts as long as the locks a
// restarted node may have lost can still be alive, as the lock horizons of
// the other nodes tell (see HorizonKey and docs/safety.md).
const QuarantineAuto time.Duration = -1

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		NodeTimeout:   50 * time.Millisecond,
		DriftFactor:   0.01,
		RetryDelayMin: 5 * time.Millisecond,
		RetryDelayMax: 50 * time.Millisecond,
		Now:           time.Now,
		ReleaseRetry:  200 * time.Millisecond,
		MaxTTL:        defaultMaxTTL,
		SessionTTL:    30 * time.Second,
		// A restarted node may have lost any lock it granted; the other
		// nodes' horizons say how long the longest one can still live.
		RestartQuarantine: QuarantineAuto,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.NodeTimeout <= 0:
		return errors.New("quorum: NodeTimeout must be positive")
	case !(c.DriftFactor >= 0 && c.DriftFactor < 1): // also rejects NaN
		return fmt.Errorf("quorum: DriftFactor %v out of range [0,1)", c.DriftFactor)
	case c.RetryDelayMin < 0 || c.RetryDelayMax < c.RetryDelayMin:
		return errors.New("quorum: need 0 <= RetryDelayMin <= RetryDelayMax")
	case c.RestartQuarantine < 0 && c.RestartQuarantine != QuarantineAuto:
		return errors.New("quorum: RestartQuarantine must be QuarantineAuto, 0 or positive")
	case c.ReleaseRetry < 0 || c.MaxTTL < 0 || c.SessionTTL < 0:
		return errors.New("quorum: ReleaseRetry, MaxTTL and SessionTTL must not be negative")
	}
	return nil
}

// Quorum is the majority of n nodes.
func Quorum(n int) int { return n/2 + 1 }

// Validity is the time a lock acquired with ttl can be trusted for, after
// elapsed was spent acquiring it: ttl - elapsed - (ttl*driftFactor + 2ms).
func Validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - drift(ttl, driftFactor)
}

// drift is the clock drift allowance that Validity takes off a ttl.
func drift(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + 2*time.Millisecond
}

// covering is the shortest ttl whose validity, once the drift allowance
// is taken off it, still covers left, with a millisecond to spare.
func covering(left time.Duration, driftFactor float64) time.Duration {
	return time.Duration(math.Ceil(float64(left+2*time.Millisecond)/(1-driftFactor))) + time.Millisecond
}
