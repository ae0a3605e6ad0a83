// Package wire holds the connections to one Redis server: Mux, a few
// pipelined connections shared by every caller, which batches the requests
// queued while a write is in flight into one write, pairs replies with
// requests in order and ends each request at its own deadline; Conn, one
// connection spoken to directly, one command at a time; and ParseReply,
// the RESP reply parser both read with (RESP2, and the RESP3 types).
//
// It knows nothing of locks or quorum: a request is encoded bytes, how many
// replies to skip and drop around its answer, and an Answerer that gets the
// reply. What a reply means is the caller's.
package wire
