package commands

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redlockd/redlockd/commands/scriptcheck"
	"github.com/redlockd/redlockd/quorum"
)

// runReplicated runs an admitted script on every backend in one round
// (quorum.Cluster.Eval) and writes the reply the rule picked.
func (h *Handler) runReplicated(c *call, e *cachedScript, n int64) {
	if e.err != nil {
		c.w.WriteError(checkRefusal(e.err))
		return
	}
	if strings.HasSuffix(c.name, "_ro") && e.info.Writes {
		c.w.WriteError(msgROScript)
		return
	}
	rest := strs(c.args[2:])
	keys, args := rest[:n], rest[n:]
	// KEYS and ARGV were checked before the command ran (reservedRefusal).
	if e.info.Writes && slices.ContainsFunc(args, quorum.IsOwnerToken) {
		// A script would change the lock but not its hold count: extended,
		// the count expires first; deleted, every hold goes at once.
		c.w.WriteError(fmt.Sprintf(msgNotSupported, c.name, "a script that may write, given an OWNER lock's token (its hold count would not follow); use RENEW and UNLOCK"))
		return
	}
	if err := scriptcheck.ArgsOK(keys, args); err != nil {
		c.w.WriteError(checkRefusal(err))
		return
	}
	if err := scriptcheck.ArgNamesOK(e.info, args); err != nil {
		c.w.WriteError(checkRefusal(err))
		return
	}
	db, err := scriptcheck.ScriptDB(e.info, args, c.s.DB(), quorum.DBs, e.sha)
	if err != nil {
		c.w.WriteError(err.Error())
		return
	}
	var res quorum.ScriptResult
	s := e.script
	if c.s.Proto() == 3 {
		s3 := *s
		s3.RESP3 = true
		s = &s3
	}
	run := func() []bool {
		res, err = h.cluster.DB(db).Eval(c.s.Context(), s, keys, args, e.info.Writes)
		return res.Timed
	}
	if e.info.Writes {
		h.evalOnKept(db, keys, run)
	} else {
		run()
	}
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	writeValue(c.w, res.Value)
}

// checkRefusal is the error reply of a body the static check refused.
func checkRefusal(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "ERR ") {
		return msg
	}
	return "ERR " + msg
}

// writeValue writes a script's reply as Redis does: nil as the null of
// the connection's protocol, errors as error replies, even nested; the
// RESP3 types as themselves, or as Redis gives them to a RESP2 client.
func writeValue(w Writer, v quorum.Value) {
	switch v.Kind {
	case quorum.NilValue:
		w.WriteNull()
	case quorum.IntValue:
		w.WriteInt(v.Int)
	case quorum.StatusValue:
		w.WriteSimple(v.Str)
	case quorum.ErrorValue:
		w.WriteError(v.Str)
	case quorum.BoolValue:
		w.WriteBool(v.Int != 0)
	case quorum.DoubleValue:
		w.WriteDoubleText(v.Str)
	case quorum.BigNumValue:
		w.WriteBigNumber(v.Str)
	case quorum.VerbatimValue:
		format, text, _ := strings.Cut(v.Str, ":")
		w.WriteVerbatim(format, text)
	case quorum.ArrayValue, quorum.MapValue, quorum.SetValue:
		switch v.Kind {
		case quorum.MapValue:
			w.WriteMap(len(v.Elems) / 2)
		case quorum.SetValue:
			w.WriteSet(len(v.Elems))
		default:
			w.WriteArray(len(v.Elems))
		}
		for _, e := range v.Elems {
			writeValue(w, e)
		}
	default:
		w.WriteBulkString(v.Str)
	}
}
