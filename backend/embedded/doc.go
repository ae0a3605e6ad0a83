// Package embedded is the in-process engine: Memory, the node of the
// embedded mode (redlockd without backends) and of the quorum package's
// unit tests. It keeps a small keyspace of strings, hashes and sorted
// sets with expiry, in each database (memKey), and runs every quorum.Cmd
// as one step under its lock: a native kind inline, within Do, a client's
// script on a goroutine of the node's (memory_line.go), so that a long
// script holds up neither its caller nor the round's other nodes; in the
// order Do was called, either way.
//
// Each command kind runs as on a Redis node: the kind's command or script
// from backend's kind table (backend.Build), run by the engine's Lua
// interpreter on gopher-lua (memory_lua*.go) over the node's keys, and
// read by the same reader (memory_kinds.go), so a kind's node semantics
// are written once, in its script. A client's script that the static
// check admitted runs on the same interpreter (Eval), with a record of
// what it changed for an undo (memory_undo.go). The node delivers pub/sub
// messages (memory_pubsub.go), reports the keys its commands changed or
// that expired for client-side caching (memory_tracking.go), and
// announces released keys to its watchers (memory_release.go).
//
// The engine imports backend for the kind table and backend/wire for the
// reply type the kinds' readers take; it opens no connection.
package embedded
