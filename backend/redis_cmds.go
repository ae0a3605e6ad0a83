package backend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redlockd/redlockd/backend/wire"
	"github.com/redlockd/redlockd/quorum"
)

func buildSetNX(c *call, cmd quorum.Cmd, _ string) {
	if cmd.Add > 0 {
		c.buildSetNXMarked(cmd)
	} else {
		c.setNXPX(cmd.Key, cmd.Token, cmd.TTL)
	}
}

func buildSet(c *call, cmd quorum.Cmd, _ string) {
	c.command(readDone, "set", cmd.Key, cmd.Token, "px", c.ms(cmd.TTL))
}

func buildCompareAndDelete(c *call, cmd quorum.Cmd, channel string) {
	if cmd.Notify {
		c.scriptTagged(compareAndDeleteNotifyScript, readYes, cmd.Key, fairReleasePrefixes, cmd.Token, channel)
	} else {
		c.script(compareAndDeleteScript, readYes, []string{cmd.Key}, cmd.Token)
	}
}

func buildCompareAndExtend(c *call, cmd quorum.Cmd, _ string) {
	c.scriptTTL(compareAndExtendScript, readYes, []string{cmd.Key}, cmd.TTL, cmd.Token)
}

func buildGet(c *call, cmd quorum.Cmd, _ string) {
	c.script(getScript, readGet, []string{cmd.Key})
}

func buildDelete(c *call, cmd quorum.Cmd, channel string) {
	if cmd.Notify {
		c.script(deleteNotifyScript, readYes, []string{cmd.Key, WaitKey(cmd.Key)}, channel)
	} else {
		c.command(readYes, "del", cmd.Key)
	}
}

func buildExpire(c *call, cmd quorum.Cmd, _ string) {
	c.command(readYes, "pexpire", cmd.Key, c.ms(cmd.TTL))
}

func buildAddTTL(c *call, cmd quorum.Cmd, _ string) {
	c.script(addTTLScript, readAddedTTL, []string{cmd.Key}, cmd.Token, c.ms(cmd.Add), c.ms(cmd.Limit))
}

func buildExtendOrSetNX(c *call, cmd quorum.Cmd, _ string) {
	c.scriptTTL(extendOrSetNXScript, readYes, []string{cmd.Key}, cmd.TTL, cmd.Token)
}

func buildReadFence(c *call, cmd quorum.Cmd, _ string) {
	c.command(readFence, "get", cmd.Key)
}

func buildRaiseFence(c *call, cmd quorum.Cmd, _ string) {
	c.script(raiseFenceScript, readN, []string{cmd.Key}, strconv.FormatInt(cmd.N, 10), c.ms(cmd.TTL))
}

func buildPublish(c *call, cmd quorum.Cmd, _ string) {
	c.command(readN, "publish", cmd.Key, cmd.Token)
}

// buildHeld builds the owner-lock scripts.
func (c *call) buildHeld(cmd quorum.Cmd, channel string) {
	k, hk := cmd.Key, quorum.HoldsKey(cmd.Key)
	switch cmd.Kind {
	case quorum.HoldOwner:
		c.script(holdOwnerScript, readHold, []string{k, hk, cmd.Mark}, cmd.Prefix, cmd.Token, c.ms(cmd.TTL))
	case quorum.UndoHold:
		c.script(undoHoldScript, readYes, []string{k, hk, cmd.Mark, WaitKey(k)}, cmd.Token, c.ms(cmd.TTL), channel)
	case quorum.Unhold:
		c.script(unholdScript, readUnhold, []string{k, hk, WaitKey(k)}, cmd.Token, channel)
	case quorum.ExtendHeld:
		c.script(extendHeldScript, readYes, []string{k, hk}, cmd.Token, c.ms(cmd.TTL))
	case quorum.RestoreHeld:
		if cmd.N <= 1 {
			c.setNXPX(k, cmd.Token, cmd.TTL)
		} else {
			c.script(restoreHeldScript, readYes, []string{k, hk}, cmd.Token, quorum.FormatHolds(cmd.Token, cmd.N), c.ms(cmd.TTL))
		}
	}
}

// buildMulti builds the multi-key scripts; the keys' line is their first
// key's.
func (c *call) buildMulti(cmd quorum.Cmd, channel string) {
	if len(cmd.Keys) == 0 {
		c.err = errNoKeys
		return
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
}

// intReply reads an integer reply.
func intReply(rep wire.Reply) (int64, error) {
	if rep.Kind != ':' {
		return 0, unexpected(rep)
	}
	return rep.Num, nil
}

// readYes: an integer, OK when above 0.
func readYes(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	return quorum.Reply{OK: n > 0, N: n}, err
}

// readN: an integer, always OK.
func readN(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	return quorum.Reply{OK: err == nil, N: n}, err
}

// readStored reads SET NX: OK when stored, null when the key is held (by
// any token).
func readStored(_ *call, rep wire.Reply) (quorum.Reply, error) {
	switch {
	case rep.Kind == '+':
		return quorum.Reply{OK: true}, nil
	case rep.Null:
		return quorum.Reply{}, nil
	}
	return quorum.Reply{}, unexpected(rep)
}

// readDone reads SET: a status reply.
func readDone(_ *call, rep wire.Reply) (quorum.Reply, error) {
	if rep.Kind != '+' {
		return quorum.Reply{}, unexpected(rep)
	}
	return quorum.Reply{OK: true}, nil
}

// readGet reads getScript: false when absent, {value, pttl} for a string,
// {pttl, GET's error} for a key of another type: that error (WRONGTYPE),
// with the key's ttl in the Reply all the same (see KeyError). A key
// without an expiry (set behind the proxy's back) reports -1ms, as PTTL's
// -1 does.
func readGet(_ *call, rep wire.Reply) (quorum.Reply, error) {
	if rep.Kind == '*' && len(rep.Elems) == 2 && rep.Elems[0].Kind == ':' {
		msg, _ := rep.Elems[1].Bulk()
		return quorum.Reply{TTL: time.Duration(rep.Elems[0].Num) * time.Millisecond}, serverError(msg)
	}
	v, ms, ok, err := pairReply(rep)
	return quorum.Reply{OK: ok, Token: v, TTL: time.Duration(ms) * time.Millisecond}, err
}

// pairReply reads a script's {string, integer}; ok is false for its false
// (a null).
func pairReply(rep wire.Reply) (s string, n int64, ok bool, err error) {
	if rep.Null {
		return "", 0, false, nil
	}
	if rep.Kind == '*' && len(rep.Elems) == 2 {
		if v, isBulk := rep.Elems[0].Bulk(); isBulk && rep.Elems[1].Kind == ':' {
			return v, rep.Elems[1].Num, true, nil
		}
	}
	return "", 0, false, fmt.Errorf("unexpected script reply %+v", rep)
}

// readAddedTTL: the new ttl in ms, or -1 when not held.
func readAddedTTL(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if err != nil || n < 0 {
		return quorum.Reply{}, err
	}
	return quorum.Reply{OK: true, TTL: time.Duration(n) * time.Millisecond}, nil
}

// readEach: one integer per key, 1 where it was deleted.
func readEach(c *call, rep wire.Reply) (quorum.Reply, error) {
	if rep.Kind != '*' || len(rep.Elems) != int(c.nkeys) {
		return quorum.Reply{}, fmt.Errorf("%d answers for %d keys", len(rep.Elems), c.nkeys)
	}
	each := make([]bool, len(rep.Elems))
	for i, e := range rep.Elems {
		n, err := intReply(e)
		if err != nil {
			return quorum.Reply{}, err
		}
		each[i] = n == 1
	}
	return quorum.Reply{OK: true, Each: each}, nil
}

// readHold: false when no hold is held for the round, else {token, holds}.
func readHold(_ *call, rep wire.Reply) (quorum.Reply, error) {
	t, n, ok, err := pairReply(rep)
	return quorum.Reply{OK: ok, Token: t, N: n}, err
}

// readUnhold: the holds left, or -1 when the key does not hold the token.
func readUnhold(_ *call, rep wire.Reply) (quorum.Reply, error) {
	n, err := intReply(rep)
	if err != nil || n < 0 {
		return quorum.Reply{}, err
	}
	return quorum.Reply{OK: true, N: n}, nil
}

// readFence: the counter, 0 when absent (OK is false then).
func readFence(_ *call, rep wire.Reply) (quorum.Reply, error) {
	switch {
	case rep.Null:
		return quorum.Reply{}, nil
	case rep.Kind != '$':
		return quorum.Reply{}, unexpected(rep)
	}
	n, err := parseFence(rep.Str)
	return quorum.Reply{OK: err == nil, N: n}, err
}
