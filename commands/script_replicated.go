package commands

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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
	db, ok := scriptDB(c.s.DB(), e.info, args)
	if !ok {
		c.w.WriteError(msgDBIndex)
		return
	}
	var v quorum.Value
	var err error
	run := func() { v, err = h.cluster.DB(db).Eval(c.s.Context(), e.script, keys, args, e.info.Writes) }
	if e.info.Writes {
		h.evalOnKept(db, keys, run)
	} else {
		run()
	}
	if err != nil {
		writeLockError(c.w, c.name, err)
		return
	}
	writeValue(c.w, v)
}

// scriptDB is the db a script runs in: the one it SELECTs first (literal,
// or tonumber(ARGV[n])), else the connection's. false: the SELECT would
// fail, as Redis's does for an index outside 0–15.
func scriptDB(conn int, info scriptcheck.Info, args []string) (int, bool) {
	switch {
	case info.DBArg > 0:
		if info.DBArg > len(args) {
			return 0, false
		}
		db, ok := dbNumber(args[info.DBArg-1])
		return db, ok && db >= 0 && db < quorum.DBs
	case info.DB >= 0:
		return info.DB, info.DB < quorum.DBs
	}
	return conn, true
}

// dbNumber reads a db index as the script's tonumber() does: "3", " 3"
// and "3.0" are db 3.
func dbNumber(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > quorum.DBs {
		return 0, false
	}
	return int(f), true
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
// the connection's protocol, errors as error replies, even nested.
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
	case quorum.ArrayValue:
		w.WriteArray(len(v.Elems))
		for _, e := range v.Elems {
			writeValue(w, e)
		}
	default:
		w.WriteBulkString(v.Str)
	}
}
