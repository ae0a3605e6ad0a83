// Package proxy owns the client side of redlockd: the RESP listener and
// request reader, the per-connection state wiring, RESP2/RESP3 reply
// encoding, in-flight command tracking and graceful shutdown.
//
// It never decides a lock outcome: every command goes to a
// commands.Handler, which chooses the reply's shape through the
// commands.Writer that this package implements.
//
// Assumptions: each connection has one goroutine, which reads the requests
// that have arrived as one batch, in order; a batch is executed and its replies
// written to the socket before the next batch is read, so pipelined replies
// keep their order and an in-flight batch is one unit for shutdown.
package proxy
