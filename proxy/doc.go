// Package proxy owns the client side of redlockd: the RESP listener (built
// on tidwall/redcon), the per-connection state wiring, RESP2/RESP3 reply
// encoding, in-flight command tracking and graceful shutdown.
//
// It never decides a lock outcome: every command goes to a
// commands.Handler, which chooses the reply's shape through the
// commands.Writer that this package implements.
//
// Assumptions: redcon runs one goroutine per connection and hands it the
// commands of one read batch in order; a batch is executed and its replies
// written to the socket before the next batch is read, so pipelined replies
// keep their order and an in-flight batch is one unit for shutdown.
package proxy
