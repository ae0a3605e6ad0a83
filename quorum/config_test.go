package quorum

import (
	"testing"
	"time"
)

// testConfig is a fast config for unit tests: short node timeout and retry
// delays, real clock.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.NodeTimeout = 100 * time.Millisecond
	cfg.RetryDelayMin = time.Millisecond
	cfg.RetryDelayMax = 5 * time.Millisecond
	// Retried releases would add calls that tests count; pending_test.go
	// turns them on where it tests them.
	cfg.ReleaseRetry = 0
	return cfg
}

func newCluster(t *testing.T, nodes []Node, cfg Config) *Cluster {
	t.Helper()
	c, err := New(nodes, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}
