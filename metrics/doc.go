// Package metrics turns what the lock cluster and the command table report
// into Prometheus families named redlockd_…, into INFO's extra lines, and
// into one log line per backend state change. It also serves /metrics,
// /healthz and /readyz.
//
// It depends on quorum (whose Observer it implements) and on nothing in the
// request path: quorum and commands report through small interfaces and do
// not import Prometheus. Every method is safe for concurrent use and cheap,
// since it runs on the lock's critical path.
//
// A backend is "up" when its last call got an answer from the server, a
// Redis error reply included (OOM, READONLY… mean the server is there but
// votes no); "down" after a timeout, a refused or reset connection, or any
// other transport failure.
package metrics
