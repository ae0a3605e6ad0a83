// Package server assembles a running redlockd from one Config: its nodes,
// the lock cluster with its observer, the command handler, the proxy
// server and the metrics. The binary (cmd/redlockd) and the tests' servers
// (testkit/redlocktest) both build it here, so that each derived setting
// is decided in one place: MaxTTL caps the commands and bounds the
// quorum's release retries and the lock horizon.
//
// It assumes what its parts assume (see their doc.go); it adds no lock
// logic of its own, only the order in which they are built and stopped.
package server
