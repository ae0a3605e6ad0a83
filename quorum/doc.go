// Package quorum implements the Redlock algorithm over N independent nodes.
//
// Every operation is one round, or a few (round.go): each node is asked one
// Cmd at once, under one per-node deadline; each reply becomes a vote (the
// restart quarantine's veto applied after the call, errors named by node);
// the votes are tallied; and the rule of the operation decides. An
// operation declares only what each node is asked, how a reply votes, and
// what undoes a grant after a failed round (an acquire: a release wherever
// the round may have stored its token; an extend: nothing; a client's
// replicated script: an undo of its recorded run wherever the answer
// differs from the reply, script.go). The majority
// rule Q = N/2+1, the validity arithmetic (ttl - elapsed - drift, on Go's
// monotonic clock), the cleanup after a failed grant, the retries of
// releases a node did not answer (bounded, per node, until it answers or
// the key's ttl has passed, or until a later round stores the same token
// there; Close stops them) and the Observer's reports
// exist once, for all of them. A round is driven by the replies: no
// goroutine waits per node, and the Async operations hand their outcome to
// a callback, so a caller can keep many rounds in flight.
//
// A caller's ctx ends its wait, never a round: a round once started runs
// to its end (its replies reported, its cleanup made) whether anybody
// waits for it or not (round.go: await). Every operation stops waiting
// when ctx ends and returns ctx's error. A caller already gone starts no
// round, except a release or a delete, which is sent whatever ctx says,
// so that an unlock sent just before a client hangs up still lands (and
// is retried where a node did not answer). A grant that lands after its
// caller left (an acquire's, a takeover's, a hand-over's) is undone as a
// failed round's is. One round is waited for whatever ctx says: a writing
// client script's, whose change, once a majority made it, others may have
// read, so that it cannot be undone as a grant is (script.go: Eval).
//
// A Cluster works in one database of its nodes (SELECT's 0 to 15): DB(n)
// is the same Cluster in database n, and its rounds stamp n on every Cmd
// they send, in one place (round.launch). What the Cluster keeps by lock
// key (waiters, pending releases) it keeps by database and key.
//
// It knows neither RESP nor any Redis client: nodes are reached through the
// four-method Node interface, whose Cmd kinds list everything a node must
// do atomically; package backend implements it for Redis and in memory.
//
// Assumption, stated rather than hidden: each node expires keys by its own
// clock, and those clocks advance at roughly the same rate as ours. The
// drift allowance (DriftFactor * ttl + 2ms) covers small rate differences,
// not jumps of a wall clock.
package quorum
