package quorum

import (
	"context"
	"time"
)

// Node is one independent lock backend (a Redis master, or an in-memory
// node in embedded mode). The whole interface is four methods: every
// operation the quorum makes on a node is a Cmd given to Do, so a node
// implements all of them or fails to compile, and a wrapper (a test fault,
// a metrics layer) overrides one method to see every call.
type Node interface {
	// Name identifies the node in errors, logs and INFO (e.g. "127.0.0.1:6379").
	Name() string
	// Do starts cmd on the node and hands its reply to r, exactly once,
	// from any goroutine, possibly before Do returns. Do never blocks on
	// the node. The node enforces deadline itself: a reply it has not had
	// by then is an error that matches context.DeadlineExceeded, reported
	// soon after deadline. Commands on one key (a Cmd's Key) reach the
	// server in the order Do was called: a release never overtakes the SET
	// it undoes.
	Do(deadline time.Time, cmd Cmd, r Receiver)
	// Watch starts telling w what the node learns in the background (its
	// server's identity, releases announced by any proxy), until the node
	// is closed. It reports whether the node can identify its server: the
	// in-memory node cannot, and never calls w.Server.
	Watch(w Watcher) (identifies bool)
	// Close releases the node's resources. Safe to call twice.
	Close() error
}

// Receiver takes one node's reply to one Do. Receive must not block.
type Receiver interface{ Receive(Reply) }

// ReceiverFunc adapts a function to a Receiver.
type ReceiverFunc func(Reply)

// Receive calls f.
func (f ReceiverFunc) Receive(rep Reply) { f(rep) }

// Watcher is what a node reports to in the background. Both functions
// must not block; either may be nil.
type Watcher struct {
	// Server is called with every look the node takes at its server: on
	// each new connection, before the connection carries any command, and
	// periodically.
	Server func(ServerInfo)
	// Released is called with the database and key of every release
	// announced on the node (from this proxy or any other one in front of
	// the same server). Announcements are hints, never votes: one may be
	// lost.
	Released func(db int, key string)
	// Message is called with every message that reaches the node's
	// client subscriptions (Subscribe): pattern is the subscribed pattern
	// that matched channel, "" for a channel subscription. A node may
	// deliver a copy that another node delivers too; telling them apart
	// is the caller's.
	Message func(channel, pattern, payload string)
	// Invalidated is called with the keys that changed on the node (by a
	// write of any client, of this proxy or another, or by expiry), in any
	// database, as the server's client-side caching reports them; nil
	// keys mean that anything may have changed (the server was flushed,
	// or the node's link for these reports was lost or restored, and
	// changes in between were not heard). A node reports nil when its
	// reports begin, so the first nil marks from when no change is left
	// out. A change may be reported more than once; none that the node
	// heard of is left out.
	Invalidated func(keys []string)
}

// CmdKind names one operation of a node. Each is atomic on the node.
type CmdKind uint8

// The commands a node runs. "Holds" is the hold count of an owner lock at
// HoldsKey(Key), as FormatHolds writes it; a missing count, or one of
// another token, is one hold.
const (
	// SetNX: store Key=Token for TTL if Key is absent. OK: stored. With
	// Add > 0 (a waiter's round), a Key that fair waiters are queued for
	// is not stored either (N = FairQueued), and a Key that is not stored
	// is marked as waited for during Add (never shortening an earlier
	// mark): until then its release is announced. Such a waiter is a
	// writer: it also marks WriterKey(Key) as long (new readers are
	// refused meanwhile, see AcquireShared), and clears that mark when it
	// stores Key.
	SetNX CmdKind = iota + 1
	// Set: store Key=Token for TTL unconditionally. OK: always.
	Set
	// CompareAndDelete: delete Key if it holds Token. OK: deleted. N: 1
	// deleted, 0 held by another token, -1 absent. With Notify, a
	// deletion of a marked key is announced, and where fair waiters are
	// queued for Key it is reserved for them instead (see FairAcquire).
	CompareAndDelete
	// CompareAndExtend: set Key's ttl to TTL if it holds Token. OK: done.
	CompareAndExtend
	// Get: read Key. OK: present; Token its value; TTL its remaining ttl
	// (negative when it has none).
	Get
	// Delete: delete Key unconditionally. OK: it existed. With Notify, as
	// CompareAndDelete.
	Delete
	// Expire: set Key's ttl to TTL unconditionally. OK: it existed.
	Expire
	// AddTTL: if Key holds Token and has an expiry, add Add to its
	// remaining ttl, capped at Limit. OK: done; TTL the new ttl.
	AddTTL
	// ExtendOrSetNX: extend Key to TTL where it holds Token, store it where
	// it is absent. OK: it holds Token now; N: 1 extended, 2 stored.
	ExtendOrSetNX
	// SetNXAll: store every key of Keys=Token for TTL if none is present.
	// OK: stored.
	SetNXAll
	// ExtendAll: set every key of Keys to Token for TTL if all hold Token.
	// OK: done.
	ExtendAll
	// ReleaseEach: delete each key of Keys that holds Token, announcing
	// marked ones. Each: per key, deleted.
	ReleaseEach
	// HoldOwner: one node's part of a round of LockOwner. If Key holds a
	// token starting with Prefix, add one hold to it and raise Key's ttl to
	// at least TTL; if Key is absent, set it to Token with one hold. Either
	// way record at Mark (the round's mark key, for TTL) which token got
	// the hold. If the mark exists, the round was undone
	// (nothing is added, unless the undo kept a granted token that Key
	// still holds: then the hold goes to it) or this is a repeat (its
	// recorded hold is returned). OK: a hold is held for the round; Token
	// the token holding it, N its holds.
	HoldOwner
	// UndoHold: take back the hold recorded at Mark (a mark key), unless
	// it went to Token (the granted token; "" when none). Where the round
	// has not arrived, leave a mark (for TTL) that lets it add a hold to
	// Token only, or nothing. OK: a hold was taken back. Dropping the last
	// hold deletes Key and Holds, and is announced.
	UndoHold
	// Unhold: if Key holds Token, drop one hold; with none left delete Key
	// and Holds, announced. OK: Key held Token; N: holds left (0: deleted).
	Unhold
	// ExtendHeld: if Key holds Token, raise the ttl of Key and Holds to TTL
	// where it is shorter (never shorten: another hold may have been
	// granted a longer validity). OK: done.
	ExtendHeld
	// RestoreHeld: if Key is absent, store Key=Token and, with N > 1, its
	// hold count N, both for TTL. OK: stored.
	RestoreHeld
	// ReadFence: read the fencing counter at Key. N: its value, 0 when
	// absent; a counter that is not a decimal integer in [0, MaxFence] is
	// an error matching ErrBadFence.
	ReadFence
	// RaiseFence: store N at Key unless it holds more, set its ttl to TTL.
	// N (reply): the value Key holds afterwards.
	RaiseFence
	// Eval: run Script with Keys and Args in DB. Value: its reply. A
	// script's own error (one it returned, or one of a command it called)
	// is an ErrorValue; Err is only the node's failure (unreachable, late,
	// OOM, BUSY, …). With Mark set, the node records at Mark (for TTL) how
	// each key of Keys was before the script and how the script left it,
	// in the same atomic step, so that UndoEval can take the script back.
	//   - Mark: a fresh key under "redlockd:" (one per round; set only for
	//     a script that may write and has keys). The record at Mark holds,
	//     per key of Keys, its value and absolute expiry before the script
	//     and after it, and lives TTL.
	//   - TTL: how long the node keeps the record at Mark.
	//   - Limit (every Eval): a key of Keys that the script leaves present
	//     without an expiry is given Limit as its ttl, in the same atomic
	//     step (0: left as it is); no script makes a lock that never
	//     expires. (Without Mark the script does not write, or has no
	//     keys: there is nothing to limit.)
	//   - Max (with Mark): the longest expiry from now that the script
	//     may leave on a key it changed; past it, the run is taken back in
	//     the same atomic step and its reply is the error MsgTTLExceedsMax.
	// With Mark, TTL (reply) is the longest remaining ttl among Keys
	// after the script (0 when none has one); Effect is what the run
	// changed, equal on two nodes exactly when they left every key they
	// changed alike (value and type; an expiry or none), "" when it
	// changed nothing (it then needs no record, which goes at once or
	// within moments); Each says, per
	// key of Keys, whether the script gave the key an expiry of its own.
	// The record at Mark lives no longer than the longest expiry the run
	// left (the time a key it deleted would have lived), plus a margin,
	// within TTL.
	// If UndoEval of Mark arrived first, the script's effect is taken back
	// in the same atomic step (the record says it was undone).
	Eval
	// UndoEval: where a key of Keys is still as the Eval recorded at Mark
	// left it, put it back as it was before (absent, or its old value and
	// expiry; absent when that expiry has passed); a key changed since is
	// left alone. The record at Mark then says "undone" (as long as the
	// record had left to live; for TTL where the Eval has not arrived), so
	// an Eval of Mark arriving later undoes itself. OK: something was put
	// back.
	UndoEval
	// RaiseHorizon: set the ttl of the lock horizon at Key (HorizonKey) to
	// TTL unless it is longer already (never shorten: another proxy may
	// have raised it for a longer lock); a horizon without expiry stays.
	// OK: done; TTL the horizon's ttl afterwards.
	RaiseHorizon
	// ReadHorizon: read the remaining ttl of the lock horizon at Key. OK:
	// present; TTL its remaining ttl (0 when absent, negative when it has
	// no expiry).
	ReadHorizon
	// Subscribe: subscribe the node to the channel Key, or with N = 1 to
	// the pattern Key, for the clients' pub/sub; what arrives goes to the
	// watchers' Message. Subscriptions are counted: only the first
	// Subscribe of a Key reaches the server, and the node keeps it (a
	// reconnect subscribes again) until as many Unsubscribes. OK: the
	// server confirmed it, or it was already subscribed; an error (the
	// node is down) still leaves it to be restored on reconnect. Pub/sub
	// spans the server's databases: DB is not read.
	Subscribe
	// Unsubscribe: take back one Subscribe of Key (N = 1: a pattern); the
	// last one unsubscribes the server. OK: done, or nothing to take back.
	Unsubscribe
	// Publish: publish the message Token on the channel Key. N: how many
	// subscribers the server delivered it to.
	Publish
	// CompareAndSwap: if Key holds Old, store Key=Token for TTL (SET key
	// new PX ttl IFEQ old). OK: swapped. N: 1 swapped, 0 held by another
	// token, -1 absent.
	CompareAndSwap

	// The semaphore (LOCK … PERMITS n) commands; see permits.go. Key is
	// the semaphore's key; a permit token names its n and slot
	// (ParsePermitToken), and so its slot key and the key's marker.
	//
	// ReadPermits: read Key's value and each of the N slots. OK: always;
	// Token: Key's value ("" when absent); Value: an array of N elements,
	// the token holding each slot or nil. With Add > 0 and Key present,
	// Key is marked as waited for during Add, as SetNX does.
	ReadPermits
	// AcquirePermit: if Key is absent or holds the marker of the token's
	// n, and the token's slot is free, store the slot = Token for TTL and
	// Key = the marker with at least TTL left (never shortened). OK:
	// stored. Otherwise N is the n of a marker of another n (0 when the
	// refusal is something else), and with Add > 0 Key is marked as
	// waited for, as SetNX does.
	AcquirePermit
	// ExtendPermit: if the token's slot holds Token, set its ttl to TTL
	// and raise Key's marker to at least TTL. OK: done.
	ExtendPermit
	// ReleasePermit: delete the token's slot if it holds Token; Key's
	// marker then lives as long as the longest slot left, or is deleted
	// with none left. OK: deleted; N: 1 deleted, 0 held by another token,
	// -1 absent. With Notify, a deletion is announced where waiters marked
	// Key.
	ReleasePermit

	// The read-write lock (LOCK … SHARED, see shared.go). While readers
	// hold Key it stores SharedMarker with the expiry of the longest
	// reader; the readers' tokens and expiries live at SharedKey(Key), and
	// a waiting writer's mark at WriterKey(Key).
	//
	// AcquireShared: add reader Token for TTL if Key is absent, or holds
	// SharedMarker with a live reader, and no writer waits (WriterKey is
	// absent). OK: added. With Add > 0, a refused reader marks Key as
	// waited for, as SetNX does.
	AcquireShared
	// ExtendShared: set reader Token's expiry to TTL from now (the marker
	// follows the longest reader). A Key holding Token itself (a lock
	// taken with a token of that shape) is extended as CompareAndExtend
	// does. OK: done.
	ExtendShared
	// ReleaseShared: remove reader Token; the last live reader's removal
	// deletes Key and is announced where waiters marked it. A Key holding
	// Token itself is deleted as CompareAndDelete does. OK: removed. N: 1
	// removed, 0 held otherwise, -1 absent.
	ReleaseShared
	// ReadShared: read a shared hold. OK: Key holds SharedMarker; N its
	// live readers.
	ReadShared

	// The fair queue of a key (LOCK … WAIT ms FAIR, see fair.go): its
	// entries are tokens ordered by ticket (then by token), each with an
	// expiry of its own; an entry whose expiry passed is not queued.
	// While entries are queued, a free Key is reserved for them: it holds
	// a value of the node's that no acquire but FairAcquire's takes, until
	// the last entry expires. "Free" below is absent or so reserved.

	// FairTail: N: the largest ticket queued for Key, 0 when none.
	FairTail
	// FairAcquire: one round of a fair waiter: queue Token at ticket N
	// (an entry already queued keeps its ticket) with an expiry Add from
	// now; then, if Key is free and Token is the first entry queued,
	// store Key=Token for TTL and take Token out of the queue. Otherwise
	// reserve a free Key, and mark Key as waited for during Add, as
	// SetNX does. With N = 0 (a try) it queues nothing and stores
	// Key=Token for TTL only if Key is absent and nobody is queued. OK:
	// stored.
	FairAcquire
	// FairUndo: the undo of a failed FairAcquire round: where Key holds
	// Token, delete it, queue Token again at ticket N, expiring Add from
	// now, and reserve Key. OK: deleted.
	FairUndo
	// FairLeave: take Token out of Key's queue. Where Key is free
	// (whether or not Token was still queued: its entry expires as its
	// wait runs out), Key stays reserved while entries are left (its
	// release announced, so that the next waiter, on any proxy, tries at
	// once) and is freed otherwise. OK: it was queued.
	FairLeave

	// ForgetEval: drop the record an Eval kept at Mark (over Keys): the
	// round it belongs to stands, nothing will undo it. OK: a record was
	// there.
	ForgetEval
)

// fact is one thing the quorum knows of a kind of command, whatever
// node runs it; a kind's facts are its row of kindFacts.
type fact uint8

const (
	// factStores: it may store Key=Token (or each of Keys=Token), so
	// that a release queued for the token, from an earlier round, would
	// delete this round's grant (see retrier.supersede).
	factStores fact = 1 << iota
	// factLeavesTTL: a yes leaves the lock on its node for the TTL asked.
	factLeavesTTL
	// factLeavesReplyTTL: a yes leaves the lock for the expiry its
	// Reply.TTL reports (AddTTL's new ttl).
	factLeavesReplyTTL
	// factNotAboutKeys: its error replies are never about a client's key (a
	// client's script, whose errors are its reply, its undo, and the
	// server-wide and pub/sub kinds); see KeyReplies.
	factNotAboutKeys
)

// kindFacts is the quorum's one table of command kinds: a kind's row
// says what its replies leave on the node and whether its token is
// stored. How a node runs the kind (its script, how its reply reads) is
// the node's table, backend's kinds.
var kindFacts = [...]fact{
	SetNX:            factStores | factLeavesTTL,
	Set:              factStores | factLeavesTTL,
	CompareAndExtend: factLeavesTTL,
	Expire:           factLeavesTTL,
	AddTTL:           factLeavesReplyTTL,
	ExtendOrSetNX:    factStores | factLeavesTTL,
	SetNXAll:         factStores | factLeavesTTL,
	ExtendAll:        factLeavesTTL,
	HoldOwner:        factStores | factLeavesTTL,
	ExtendHeld:       factLeavesTTL,
	RestoreHeld:      factStores | factLeavesTTL,
	Eval:             factNotAboutKeys,
	UndoEval:         factNotAboutKeys,
	RaiseHorizon:     factNotAboutKeys,
	ReadHorizon:      factNotAboutKeys,
	Subscribe:        factNotAboutKeys,
	Unsubscribe:      factNotAboutKeys,
	Publish:          factNotAboutKeys,
	CompareAndSwap:   factStores | factLeavesTTL,
	AcquirePermit:    factStores | factLeavesTTL,
	ExtendPermit:     factLeavesTTL,
	AcquireShared:    factStores | factLeavesTTL,
	ExtendShared:     factLeavesTTL,
	FairAcquire:      factStores | factLeavesTTL,
	ForgetEval:       factNotAboutKeys,
}

// has reports whether k's row holds f.
func (k CmdKind) has(f fact) bool { return int(k) < len(kindFacts) && kindFacts[k]&f != 0 }

// FairQueued is SetNX's N when it stored nothing because fair waiters
// are queued for the key.
const FairQueued = 2

// Cmd is one operation asked of one node; the fields each kind reads are
// in its description.
type Cmd struct {
	Kind   CmdKind
	Key    string
	Keys   []string
	Token  string
	Prefix string
	Mark   string // HoldOwner, UndoHold: the round's mark key
	TTL    time.Duration
	// SetNX: the wait mark; AddTTL: the amount added.
	Add   time.Duration
	Limit time.Duration
	// Eval: the longest expiry a script may set (see Eval).
	Max time.Duration
	N   int64
	// Notify announces a deletion where waiters marked the key.
	Notify bool
	// DB is the database (0–15, SELECT's index) that the keys live in.
	DB int
	// Eval: the script and its arguments.
	Script *Script
	Args   []string
	// CompareAndSwap: the token Key must hold.
	Old string
}

// Script is a Lua body that a node runs by its SHA1, loading it where the
// server does not have it.
type Script struct {
	Src string
	SHA string // hex SHA1 of Src
	// RESP3: the reply is wanted as Redis gives it to a RESP3 client (one
	// that said HELLO 3): maps, sets, doubles, booleans, big numbers and
	// verbatim strings keep their types. Otherwise as to a RESP2 client.
	RESP3 bool
}

// ValueKind is the type of a script's reply.
type ValueKind uint8

// The types a script's reply can have (Redis's conversion of Lua values).
const (
	NilValue ValueKind = iota
	IntValue
	BulkValue
	StatusValue
	ErrorValue
	ArrayValue
	// The RESP3 types, in a reply wanted so (Script.RESP3).
	MapValue      // Elems: key, value, key, value…
	SetValue      // Elems
	DoubleValue   // Str: the digits as the node wrote them ("3.5", "inf")
	BoolValue     // Int: 1 true, 0 false
	BigNumValue   // Str: the digits
	VerbatimValue // Str: the format, a colon, the text ("txt:hello")
)

// Value is a script's reply as one node gave it.
type Value struct {
	Kind  ValueKind
	Int   int64
	Str   string // BulkValue, StatusValue, ErrorValue, DoubleValue, BigNumValue, VerbatimValue
	Elems []Value
}

// Reply is one node's answer to one Cmd.
type Reply struct {
	OK    bool
	Token string
	TTL   time.Duration
	N     int64
	Each  []bool
	Value *Value // Eval
	// Effect: what a marked Eval changed on the node (see Eval).
	Effect string
	// ErrReply is, within a round, the node's error reply about the
	// command's key, as the plain command gives it (the key holds another
	// type of value: "WRONGTYPE Operation against a key holding the wrong
	// kind of value"): the node answered, and the reply votes no (OK is
	// false; Err is nil, it is no failure to reach the node). A node
	// gives such a reply as its Err (an error with a ReplyError whose
	// code KeyReplyCode names, see KeyReplies); the round turns it into
	// ErrReply on receipt. A Get's TTL is then the key's remaining ttl.
	ErrReply string
	// Err is the node's failure. A Get of a key of another type fails
	// with GET's error reply, and sets TTL to the key's remaining ttl.
	Err error
	// Shard names the shard that answered, for a node that is a Redis
	// Cluster (ShardInfo.Name); "" for a node that is one server, or an
	// answer of several shards. A quarantined shard's answer is vetoed.
	Shard string
	// At is when the node read the reply off its connection, for the
	// node latency metric: one clock read shared by every reply of that
	// read. Zero when the node does not say (the metric then reads the
	// clock on receipt).
	At time.Time
}

// Call runs cmd on n and waits for its reply, within ctx's deadline (or the
// fallback budget when ctx has none). It is for callers outside a round:
// tools, tests, start-up checks.
func Call(ctx context.Context, n Node, cmd Cmd) Reply {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(callBudget)
	}
	ch := make(chan Reply, 1)
	n.Do(dl, cmd, ReceiverFunc(func(r Reply) { ch <- r }))
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return Reply{Err: ctx.Err()}
	}
}

// callBudget bounds a Call whose ctx has no deadline.
const callBudget = 5 * time.Second
