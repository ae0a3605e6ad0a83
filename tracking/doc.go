// Package tracking is client-side caching over every node of the lock
// cluster: which client connections want to hear of which keys' changes,
// and the delivery of the changes the nodes report.
//
// Each node reports the keys that changed on it (a write by any client,
// through any proxy, or an expiry); a change made on a majority is
// reported by each of those nodes, and a change on a minority still
// changes what a quorum read answers, so every report counts and none is
// merged away across nodes. A client that tracks keys it read (the
// default mode) is told once per report that finds the key tracked, and
// the key is then forgotten, as Redis forgets it: later copies of the
// same change find nothing to tell unless the client read the key again,
// in which case the copy is a spare, harmless invalidation. A read in
// flight keeps its key tracked until it has finished, so that no node's
// copy of a change is dropped while another node's answer to the read may
// still predate it. A node that loses its link for these reports reports
// nil ("anything may have changed"), which reaches every tracking client.
//
// It knows neither RESP nor the command table: a Client is anything that
// can be told of keys.
package tracking
