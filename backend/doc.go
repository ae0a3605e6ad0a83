// Package backend holds the quorum.Node implementations: Redis, a real
// redis-server reached through a multiplexer of its own, and Memory, an in-process node for
// the embedded mode and for the quorum package's unit tests.
//
// A node answers for itself only. It never decides whether a lock is held:
// counting votes, validity and drift, and releasing after a failed acquire
// belong to the quorum package. Every error a node returns (a timeout, a
// refused connection, an OOM or READONLY reply) is a plain error that the
// quorum counts as a "no" vote; nothing here turns an error into success.
//
// Every method takes ctx first and returns by its deadline: the quorum gives
// each call its own per-node timeout, so a stalled backend costs one timeout,
// never a whole request. Redis implements quorum.Node: every command goes
// straight into the multiplexer's queue with an absolute deadline and is
// answered from its reader, or failed by the connection's one deadline
// timer; its older methods are wrappers over Do.
package backend
