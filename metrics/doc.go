// Package metrics turns what the lock cluster and the command table report
// into Prometheus families named redlockd_…, into INFO's extra lines, and
// into one log line per backend state change (and, at debug level, one
// per backend call and per round). It also serves /metrics, /healthz,
// /readyz, /readyz/backends and the status page at /.
//
// It depends on quorum (whose Observer it implements) and on nothing in the
// request path: quorum and commands report through small interfaces and do
// not import Prometheus. Every method is safe for concurrent use and cheap,
// since it runs on the lock's critical path.
//
// A backend's up/down state, its quarantine and readiness are not kept
// here: they are read from the cluster's record (quorum.NodeState), which
// one watcher per backend feeds with its looks at the server, so that the
// gauges, /readyz, the log lines and the votes cannot disagree. What the
// lock calls to a backend found (the "link", for INFO) is kept here: it
// is "up" when the last call got an answer from the server, a Redis error
// reply included (OOM, READONLY… mean the server is there but votes no),
// and "down" after a timeout, a refused or reset connection, or any other
// transport failure.
package metrics
