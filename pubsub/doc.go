// Package pubsub is the clients' publish/subscribe over every node of the
// lock cluster. It owns one subscription per channel or pattern per node
// for the whole proxy, counted across the client connections that asked
// for it, and the rule that delivers each message once although every
// node delivers its own copy: a message is published once per node (by
// PUBLISH through redlockd, by a replicated script, by another proxy), so
// a copy of a (channel, payload) that another node already delivered
// within the dedup window is the same message. It knows nothing of locks
// or of RESP: the quorum's nodes carry it, the command table speaks it.
package pubsub
