package backend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/quorum"
)

// build fills in the command (or script) that runs cmd, and how its reply
// reads. channel is the node's release channel. The multi-key and owner
// operations are in buildMulti and buildHeld.
func (c *call) build(cmd *quorum.Cmd, channel string) error {
	k := cmd.Key
	switch cmd.Kind {
	case quorum.SetNX:
		if cmd.Add > 0 {
			return c.buildSetNXMarked(cmd)
		}
		c.setNXPX(k, cmd.Token, cmd.TTL)
	case quorum.Set:
		c.command(readDone, "set", k, cmd.Token, "px", c.ms(cmd.TTL))
	case quorum.CompareAndDelete:
		if cmd.Notify {
			c.scriptTagged(compareAndDeleteNotifyScript, readYes, k, fairReleasePrefixes, cmd.Token, channel)
		} else {
			c.script(compareAndDeleteScript, readYes, []string{k}, cmd.Token)
		}
	case quorum.CompareAndExtend:
		c.script(compareAndExtendScript, readYes, []string{k}, cmd.Token, c.ms(cmd.TTL))
	case quorum.Get:
		c.script(getScript, readGet, []string{k})
	case quorum.Delete:
		if cmd.Notify {
			c.script(deleteNotifyScript, readYes, []string{k, waitKey(k)}, channel)
		} else {
			c.command(readYes, "del", k)
		}
	case quorum.Expire:
		c.command(readYes, "pexpire", k, c.ms(cmd.TTL))
	case quorum.AddTTL:
		c.script(addTTLScript, readAddedTTL, []string{k}, cmd.Token, c.ms(cmd.Add), c.ms(cmd.Limit))
	case quorum.ExtendOrSetNX:
		c.script(extendOrSetNXScript, readYes, []string{k}, cmd.Token, c.ms(cmd.TTL))
	case quorum.ReadFence:
		c.command(readFence, "get", k)
	case quorum.RaiseFence:
		c.script(raiseFenceScript, readN, []string{k}, strconv.FormatInt(cmd.N, 10), c.ms(cmd.TTL))
	case quorum.CompareAndSwap:
		return c.buildSwap(cmd)
	default:
		return c.buildMore(cmd, channel)
	}
	return c.err
}

func (c *call) buildMore(cmd *quorum.Cmd, channel string) error {
	k, hk := cmd.Key, quorum.HoldsKey(cmd.Key)
	switch cmd.Kind {
	case quorum.SetNXAll, quorum.ExtendAll, quorum.ReleaseEach:
		return c.buildMulti(cmd, channel)
	case quorum.RaiseHorizon, quorum.ReadHorizon:
		return c.buildHorizon(cmd)
	case quorum.Eval:
		return c.buildEval(cmd, channel)
	case quorum.UndoEval:
		return c.buildUndoEval(cmd)
	case quorum.ForgetEval:
		return c.buildForgetEval(cmd)
	case quorum.HoldOwner:
		c.script(holdOwnerScript, readHold, []string{k, hk, cmd.Mark}, cmd.Prefix, cmd.Token, c.ms(cmd.TTL))
	case quorum.UndoHold:
		c.script(undoHoldScript, readYes, []string{k, hk, cmd.Mark, waitKey(k)}, cmd.Token, c.ms(cmd.TTL), channel)
	case quorum.Unhold:
		c.script(unholdScript, readUnhold, []string{k, hk, waitKey(k)}, cmd.Token, channel)
	case quorum.Publish:
		c.command(readN, "publish", k, cmd.Token)
	case quorum.ExtendHeld:
		c.script(extendHeldScript, readYes, []string{k, hk}, cmd.Token, c.ms(cmd.TTL))
	case quorum.RestoreHeld:
		if cmd.N <= 1 {
			c.setNXPX(k, cmd.Token, cmd.TTL)
		} else {
			c.script(restoreHeldScript, readYes, []string{k, hk}, cmd.Token, quorum.FormatHolds(cmd.Token, cmd.N), c.ms(cmd.TTL))
		}
	case quorum.ReadPermits, quorum.AcquirePermit, quorum.ExtendPermit, quorum.ReleasePermit:
		return c.buildPermits(cmd, channel)
	case quorum.AcquireShared, quorum.ExtendShared, quorum.ReleaseShared, quorum.ReadShared:
		return c.buildShared(cmd, channel)
	case quorum.FairTail, quorum.FairAcquire, quorum.FairUndo, quorum.FairLeave:
		return c.buildFair(cmd, channel)
	default:
		return fmt.Errorf("%w %d", errUnknownKind, cmd.Kind)
	}
	return c.err
}

// buildMulti builds the multi-key scripts; the keys' line is their first
// key's.
func (c *call) buildMulti(cmd *quorum.Cmd, channel string) error {
	if len(cmd.Keys) == 0 {
		return errNoKeys
	}
	switch cmd.Kind {
	case quorum.SetNXAll:
		c.script(setNXAllScript, readYes, cmd.Keys, cmd.Token, c.ms(cmd.TTL))
	case quorum.ExtendAll:
		c.script(extendAllScript, readYes, cmd.Keys, cmd.Token, c.ms(cmd.TTL))
	case quorum.ReleaseEach:
		c.nkeys = int32(len(cmd.Keys))
		c.script(releaseEachScript, readEach, waitKeys(cmd.Keys), cmd.Token, channel)
	}
	return c.err
}

// intReply reads an integer reply.
func intReply(rep reply) (int64, error) {
	if rep.kind != ':' {
		return 0, unexpected(rep)
	}
	return rep.num, nil
}

// readYes: an integer, OK when above 0.
func readYes(_ *call, rep reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	return quorum.Reply{OK: n > 0, N: n}, err
}

// readN: an integer, always OK.
func readN(_ *call, rep reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	return quorum.Reply{OK: err == nil, N: n}, err
}

// readStored reads SET NX: OK when stored, null when the key is held (by
// any token).
func readStored(_ *call, rep reply) (quorum.Reply, error) {
	switch {
	case rep.kind == '+':
		return quorum.Reply{OK: true}, nil
	case rep.null:
		return quorum.Reply{}, nil
	}
	return quorum.Reply{}, unexpected(rep)
}

// readDone reads SET: a status reply.
func readDone(_ *call, rep reply) (quorum.Reply, error) {
	if rep.kind != '+' {
		return quorum.Reply{}, unexpected(rep)
	}
	return quorum.Reply{OK: true}, nil
}

// readGet reads getScript: false when absent, else {value, pttl}. A key
// without an expiry (set behind the proxy's back) reports -1ms, as PTTL's
// -1 does.
func readGet(_ *call, rep reply) (quorum.Reply, error) {
	if rep.null {
		return quorum.Reply{}, nil
	}
	if rep.kind == '*' && len(rep.elems) == 2 {
		v, p := rep.elems[0], rep.elems[1]
		if v.kind == '$' && !v.null && p.kind == ':' {
			return quorum.Reply{OK: true, Token: v.str, TTL: time.Duration(p.num) * time.Millisecond}, nil
		}
	}
	return quorum.Reply{}, fmt.Errorf("unexpected script reply %+v", rep)
}

// readAddedTTL: the new ttl in ms, or -1 when not held.
func readAddedTTL(_ *call, rep reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if err != nil || n < 0 {
		return quorum.Reply{}, err
	}
	return quorum.Reply{OK: true, TTL: time.Duration(n) * time.Millisecond}, nil
}

// readEach: one integer per key, 1 where it was deleted.
func readEach(c *call, rep reply) (quorum.Reply, error) {
	if rep.kind != '*' || len(rep.elems) != int(c.nkeys) {
		return quorum.Reply{}, fmt.Errorf("%d answers for %d keys", len(rep.elems), c.nkeys)
	}
	each := make([]bool, len(rep.elems))
	for i, e := range rep.elems {
		n, err := intReply(e)
		if err != nil {
			return quorum.Reply{}, err
		}
		each[i] = n == 1
	}
	return quorum.Reply{OK: true, Each: each}, nil
}

// readHold: false when no hold is held for the round, else {token, holds}.
func readHold(_ *call, rep reply) (quorum.Reply, error) {
	if rep.null {
		return quorum.Reply{}, nil
	}
	if rep.kind == '*' && len(rep.elems) == 2 {
		t, n := rep.elems[0], rep.elems[1]
		if t.kind == '$' && !t.null && n.kind == ':' {
			return quorum.Reply{OK: true, Token: t.str, N: n.num}, nil
		}
	}
	return quorum.Reply{}, fmt.Errorf("unexpected script reply %+v", rep)
}

// readUnhold: the holds left, or -1 when the key does not hold the token.
func readUnhold(_ *call, rep reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if err != nil || n < 0 {
		return quorum.Reply{}, err
	}
	return quorum.Reply{OK: true, N: n}, nil
}

// readFence: the counter, 0 when absent (OK is false then).
func readFence(_ *call, rep reply) (quorum.Reply, error) {
	switch {
	case rep.null:
		return quorum.Reply{}, nil
	case rep.kind != '$':
		return quorum.Reply{}, unexpected(rep)
	}
	n, err := parseFence(rep.str)
	return quorum.Reply{OK: err == nil, N: n}, err
}
