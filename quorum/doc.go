// Package quorum implements the Redlock algorithm over N independent nodes.
//
// It owns the fan-out (every node called at once, each call bounded by the
// per-node deadline: through AsyncNode where every node implements it, else
// one goroutine per node), the majority rule Q = N/2+1, the validity arithmetic
// (ttl - elapsed - drift, on Go's monotonic clock), the release on every node
// after a failed acquire, and the jittered retries of a blocking acquire.
// Releases that a node did not answer are remembered (bounded, per node)
// and sent again until it answers or the key's ttl has passed; Close stops
// those retries.
//
// It knows neither RESP nor any Redis client: nodes are reached through the
// Node interface, implemented in package backend.
//
// Assumption, stated rather than hidden: each node expires keys by its own
// clock, and those clocks advance at roughly the same rate as ours. The
// drift allowance (DriftFactor * ttl + 2ms) covers small rate differences,
// not jumps of a wall clock.
package quorum
