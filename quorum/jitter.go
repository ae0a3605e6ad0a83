package quorum

import (
	"math/rand/v2"
	"time"
)

// jitter picks the pause before the next round of a blocking acquire,
// uniformly in [RetryDelayMin, RetryDelayMax].
func (c *Cluster) jitter() time.Duration {
	span := c.cfg.RetryDelayMax - c.cfg.RetryDelayMin
	if span <= 0 {
		return c.cfg.RetryDelayMin
	}
	return c.cfg.RetryDelayMin + time.Duration(rand.Int64N(int64(span)+1))
}
