package quorum

import "time"

// What quorum_test needs of the package's insides, and of its internal
// tests' setup.

// UnitConfig is the fast config of the internal unit tests (testConfig).
func UnitConfig() Config { return testConfig() }

// Jitter is the pause c draws before a retried round.
func (c *Cluster) Jitter() time.Duration { return c.jitter() }

// RealClock reports whether c found its clock to be time.Now.
func (c *Cluster) RealClock() bool { return c.realClock }

// SetPendingLimit bounds c's record of releases to retry to n per node.
func (c *Cluster) SetPendingLimit(n int) {
	for _, q := range c.pending.queues {
		q.mu.Lock()
	}
	c.pending.limit = n
	for _, q := range c.pending.queues {
		q.mu.Unlock()
	}
}

// AddPending records a release of key=token (database 0) to retry on
// node i for ttl, as a round that node i did not answer would.
func (c *Cluster) AddPending(i int, key, token string, ttl time.Duration) {
	c.pending.add(i, 0, key, token, ttl, false)
}

// PendingKeys lists the keys of the releases queued for node i, oldest
// first.
func (c *Cluster) PendingKeys(i int) []string {
	q := c.pending.queues[i]
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, len(q.entries))
	for _, e := range q.entries {
		keys = append(keys, e.key)
	}
	return keys
}
