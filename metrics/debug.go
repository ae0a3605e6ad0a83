package metrics

import (
	"context"
	"log/slog"
	"time"
)

// The debug lines follow every call the quorum reports: one per backend
// call (which backend, within which operation, how long, what failed) and
// one per round (its outcome and validity). Reads of the other backends'
// lock horizons for a restart quarantine are rounds of op "horizon". They
// cost one level check when debug logging is off.

// debugging reports whether debug lines are wanted now (the level can
// change while running).
func (m *Metrics) debugging() bool {
	return m.log.Enabled(context.Background(), slog.LevelDebug)
}

func (m *Metrics) debugNode(node, op string, d time.Duration, err error) {
	if err != nil {
		m.log.Debug("backend call failed", "backend", node, "op", op, "took", d, "kind", ErrorKind(err), "err", err)
		return
	}
	m.log.Debug("backend answered", "backend", node, "op", op, "took", d)
}
