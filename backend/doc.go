// Package backend holds the Redis nodes and the table of command kinds:
// Redis, a real redis-server reached through a multiplexer of its own
// (backend/wire: the connections and the RESP reply parser); Cluster, a
// whole Redis Cluster as one node, each Cmd sent to the Redis node of the
// master that serves its keys' slot (cluster*.go). The in-process node
// for the embedded mode and for the quorum package's unit tests is
// backend/embedded's Memory, which runs the same kind table.
//
// A node answers for itself only. It never decides whether a lock is held:
// counting votes, validity and drift, and releasing after a failed acquire
// belong to the quorum package. Every error a node returns (a timeout, a
// refused connection, an OOM or READONLY reply) is a plain error that the
// quorum counts as a "no" vote; nothing here turns an error into success.
// A client's script is the exception only for its own errors (one it
// returned, or one of a command it called), which are its reply.
//
// A node runs each quorum.Cmd atomically (one command or one Lua script on
// Redis, or, for a client's writing script, one MULTI … EXEC that records
// it for an undo; one step under a lock in memory) and answers by its deadline: the
// quorum gives every call of a round the same per-node deadline, so a
// stalled backend costs one timeout, never a whole request. On Redis every
// command goes into the multiplexer's queue for the connection of its key,
// so commands on one key keep their order on the wire, and is answered by
// the connection's reader, or failed by the connection's one deadline timer:
// no goroutine, context or timer per call.
//
// Each Cmd runs in its database (Cmd.DB): on Redis, a multiplexer per
// database whose connections SELECT it once, when they connect
// (redis_db.go); in memory, the key of another database is its own map key
// (backend/embedded's memKey).
//
// Each command kind is one row of kinds (kinds.go): its names, what its
// durations must hold, and the command or script that runs it with how
// its reply reads. Both nodes run that row: a Redis node sends it,
// backend/embedded's Memory runs it (Build) through its script engine over
// its own keyspace of strings, hashes and sorted sets, so a kind's node
// semantics are written once, in its script.
package backend
