package backend

import (
	"fmt"
	"strconv"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

// kind is everything the nodes know of one quorum.CmdKind: its name
// (KindName), the name errors give it, what its arguments must hold, and
// the command or script that runs it and how its reply reads (build); read: it never changes a key;
// server: it acts on the server's one lock horizon, in the server's db 0
// whatever the command's database, on every shard of a cluster.
type kind struct {
	name   string
	op     string
	need   memNeed
	read   bool
	server bool
	build  func(c *call, cmd quorum.Cmd, channel string)
}

// memNeed says which of a command's durations must be positive (a wait
// mark: not negative).
type memNeed uint8

const (
	memNeedTTL memNeed = 1 << iota
	memNeedAddLimit
	memNeedMark // Add, a wait mark
)

// kinds is the one table of command kinds. Every quorum.CmdKind has a
// row (TestMemoryKindTableComplete). A kind the embedded engine has no
// step of its own for runs there as on a Redis node: the same command or
// script (Build), through the engine's script interpreter.
var kinds = [...]kind{
	quorum.SetNX:            {name: "SetNX", op: "SET NX", need: memNeedTTL | memNeedMark, build: buildSetNX},
	quorum.Set:              {name: "Set", op: "SET", need: memNeedTTL, build: buildSet},
	quorum.CompareAndDelete: {name: "CompareAndDelete", op: "compare-and-delete", build: buildCompareAndDelete},
	quorum.CompareAndExtend: {name: "CompareAndExtend", op: "compare-and-extend", need: memNeedTTL, build: buildCompareAndExtend},
	quorum.Get:              {name: "Get", op: "GET", read: true, build: buildGet},
	quorum.Delete:           {name: "Delete", op: "DEL", build: buildDelete},
	quorum.Expire:           {name: "Expire", op: "PEXPIRE", need: memNeedTTL, build: buildExpire},
	quorum.AddTTL:           {name: "CompareAndAddTTL", op: "compare-and-add-ttl", need: memNeedAddLimit, build: buildAddTTL},
	quorum.ExtendOrSetNX:    {name: "ExtendOrSetNX", op: "extend-or-set", need: memNeedTTL, build: buildExtendOrSetNX},
	quorum.SetNXAll:         {name: "SetNXAll", op: "multi-key SET NX", need: memNeedTTL, build: (*call).buildMulti},
	quorum.ExtendAll:        {name: "ExtendAll", op: "multi-key extend", need: memNeedTTL, build: (*call).buildMulti},
	quorum.ReleaseEach:      {name: "ReleaseEach", op: "multi-key release", build: (*call).buildMulti},
	quorum.HoldOwner:        {name: "HoldOwner", op: "hold", need: memNeedTTL, build: (*call).buildHeld},
	quorum.UndoHold:         {name: "UndoHold", op: "undo hold", need: memNeedTTL, build: (*call).buildHeld},
	quorum.Unhold:           {name: "Unhold", op: "unhold", build: (*call).buildHeld},
	quorum.ExtendHeld:       {name: "ExtendHeld", op: "extend-held", need: memNeedTTL, build: (*call).buildHeld},
	quorum.RestoreHeld:      {name: "RestoreHeld", op: "restore-held", need: memNeedTTL, build: (*call).buildHeld},
	quorum.ReadFence:        {name: "ReadFence", op: "read fence", read: true, build: buildReadFence},
	quorum.RaiseFence:       {name: "RaiseFence", op: "raise fence", need: memNeedTTL, build: buildRaiseFence},
	quorum.Eval:             {name: "Eval", op: "EVALSHA", build: (*call).buildEval},
	quorum.UndoEval:         {name: "UndoEval", op: "undo script", build: (*call).buildUndoEval},
	quorum.RaiseHorizon:     {name: "RaiseHorizon", op: "raise horizon", server: true, need: memNeedTTL, build: (*call).buildHorizon},
	quorum.ReadHorizon:      {name: "ReadHorizon", op: "read horizon", server: true, read: true, build: (*call).buildHorizon},
	quorum.Subscribe:        {name: "Subscribe", op: "SUBSCRIBE", read: true},
	quorum.Unsubscribe:      {name: "Unsubscribe", op: "UNSUBSCRIBE", read: true},
	quorum.Publish:          {name: "Publish", op: "PUBLISH", read: true, build: buildPublish},
	quorum.CompareAndSwap:   {name: "CompareAndSwap", op: "compare-and-swap", need: memNeedTTL, build: (*call).buildSwap},
	quorum.ReadPermits:      {name: "ReadPermits", op: "read permits", read: true, build: (*call).buildPermits},
	quorum.AcquirePermit:    {name: "AcquirePermit", op: "acquire permit", need: memNeedTTL, build: (*call).buildPermits},
	quorum.ExtendPermit:     {name: "ExtendPermit", op: "extend permit", need: memNeedTTL, build: (*call).buildPermits},
	quorum.ReleasePermit:    {name: "ReleasePermit", op: "release permit", build: (*call).buildPermits},
	quorum.AcquireShared:    {name: "AcquireShared", op: "acquire shared", need: memNeedTTL, build: (*call).buildShared},
	quorum.ExtendShared:     {name: "ExtendShared", op: "extend shared", need: memNeedTTL, build: (*call).buildShared},
	quorum.ReleaseShared:    {name: "ReleaseShared", op: "release shared", build: (*call).buildShared},
	quorum.ReadShared:       {name: "ReadShared", op: "read shared", read: true, build: (*call).buildShared},
	quorum.FairTail:         {name: "FairTail", op: "fair tail", read: true, build: (*call).buildFair},
	quorum.FairAcquire:      {name: "FairAcquire", op: "fair acquire", need: memNeedTTL, build: (*call).buildFair},
	quorum.FairUndo:         {name: "FairUndo", op: "fair undo", build: (*call).buildFair},
	quorum.FairLeave:        {name: "FairLeave", op: "fair leave", build: (*call).buildFair},
	quorum.ForgetEval:       {name: "ForgetEval", op: "forget script", build: (*call).buildForgetEval},
}

// kindOf returns k's row; ok is false for a kind without one.
func kindOf(k quorum.CmdKind) (kind, bool) {
	if int(k) < len(kinds) && kinds[k].name != "" {
		return kinds[k], true
	}
	return kind{}, false
}

// IsRead reports whether k never changes a key.
func IsRead(k quorum.CmdKind) bool { row, _ := kindOf(k); return row.read }

// IsServerWide reports whether k acts on the server's lock horizon.
func IsServerWide(k quorum.CmdKind) bool { row, _ := kindOf(k); return row.server }

// KindName names k as the quorum.Node method of old of the same name
// ("SetNX", "HoldOwner"…; quorum.AddTTL is "CompareAndAddTTL"): the name
// under which faultnode.Node.Calls counts it.
func KindName(k quorum.CmdKind) string {
	if row, ok := kindOf(k); ok {
		return row.name
	}
	return "kind " + strconv.Itoa(int(k))
}

// OpName is the name errors give k.
func OpName(k quorum.CmdKind) string {
	if row, ok := kindOf(k); ok {
		return row.op
	}
	return "command " + strconv.Itoa(int(k))
}

// op names the call's kind in errors.
func (c *call) op() string { return OpName(c.kind) }

// build fills in the command (or script) that runs cmd, and how its reply
// reads. channel is the node's release channel. cmd is passed by value
// through the table, so that the caller's copy stays on its stack. A row's
// build records a bad argument in c.err, the build's error.
func (c *call) build(cmd quorum.Cmd, channel string) error {
	row, ok := kindOf(cmd.Kind)
	if !ok || row.build == nil {
		return fmt.Errorf("%w %d", errUnknownKind, cmd.Kind)
	}
	if err := row.checkArgs(&cmd); err != nil {
		return err
	}
	row.build(c, cmd, channel)
	return c.err
}

// checkArgs refuses durations no node should store: a ttl <= 0 (a key
// without expiry, or PEXPIRE's delete) where the kind needs one, and a
// negative wait mark.
func (row kind) checkArgs(cmd *quorum.Cmd) error {
	switch {
	case row.need&memNeedTTL != 0 && cmd.TTL <= 0,
		row.need&memNeedAddLimit != 0 && (cmd.Add <= 0 || cmd.Limit <= 0),
		row.need&memNeedMark != 0 && cmd.Add < 0:
		return ErrInvalidTTL
	}
	return nil
}

// Built is one Cmd built from its kind's row as a Redis node sends it:
// the encoded command, or EVALSHA of the kind's script, and how its
// reply reads. The embedded engine runs it over its own keyspace, so a
// kind's node semantics are written once.
type Built struct{ c call }

// Build builds cmd; channel is the node's release channel, which a
// releasing kind's script publishes on. The error is the build's own,
// before any node runs it.
func Build(cmd quorum.Cmd, channel string) (*Built, error) {
	b := &Built{c: call{kind: cmd.Kind}}
	return b, b.c.build(cmd, channel)
}

// Command is the encoded command (an array of bulk strings).
func (b *Built) Command() []byte { return b.c.req.Buf }

// Script is the script the command runs by EVALSHA; nil for a plain
// command.
func (b *Built) Script() *Script { return b.c.s }

// Read reads the command's reply (never an error reply) into the Cmd's
// Reply.
func (b *Built) Read(rep wire.Reply) (quorum.Reply, error) { return b.c.read(&b.c, rep) }

// KnownKind reports whether k has a row.
func KnownKind(k quorum.CmdKind) bool { _, ok := kindOf(k); return ok }

// CheckArgs refuses durations no node should store (see checkArgs).
func CheckArgs(cmd *quorum.Cmd) error { row, _ := kindOf(cmd.Kind); return row.checkArgs(cmd) }
