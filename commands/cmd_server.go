package commands

import (
	"sort"
	"strconv"
	"strings"

	"github.com/redlockd/redlockd/internal/glob"
	"github.com/redlockd/redlockd/quorum"
)

func init() {
	register(
		&command{name: "command", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdCommand},
		&command{name: "config", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdConfig},
		&command{name: "info", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdInfo},
		&command{name: "dbsize", arity: 1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdDBSize},
		&command{name: "scan", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdScan},
	)
}

func (h *Handler) cmdCommand(c *call) {
	sub := ""
	if len(c.args) > 0 {
		sub = strings.ToUpper(c.arg(0))
	}
	switch sub {
	case "":
		writeCommandInfos(c.w, sortedNames())
	case "COUNT":
		if len(c.args) != 1 {
			c.w.WriteError(errArity("command|count"))
			return
		}
		c.w.WriteInt(int64(len(table)))
	case "INFO":
		names := strs(c.args[1:])
		if len(names) == 0 {
			names = sortedNames()
		}
		writeCommandInfos(c.w, names)
	case "DOCS":
		// No docs: redis-cli falls back to its built-in hints.
		c.w.WriteMap(0)
	default:
		c.w.WriteError(errUnknownSub(c.arg(0), "COMMAND"))
	}
}

func sortedNames() []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeCommandInfos writes COMMAND's ten-element entry per command: name,
// arity, flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands. Unknown names are nulls, as in Redis.
func writeCommandInfos(w Writer, names []string) {
	w.WriteArray(len(names))
	for _, n := range names {
		cmd, ok := table[strings.ToLower(n)]
		if !ok {
			w.WriteNull()
			continue
		}
		first, last := commandKeys(cmd)
		w.WriteArray(10)
		w.WriteBulkString(cmd.name)
		w.WriteInt(int64(cmd.arity))
		w.WriteSet(1)
		w.WriteSimple(map[bool]string{true: "write", false: "readonly"}[cmd.write])
		w.WriteInt(first)
		w.WriteInt(last)
		w.WriteInt(b2i(first > 0))
		w.WriteSet(0)
		w.WriteSet(0)
		w.WriteArray(0)
		w.WriteArray(0)
	}
}

// commandKeys gives a command's first and last key position as COMMAND
// reports them. EVAL's keys follow numkeys, which these fields cannot say
// (Redis reports 0 for it too).
func commandKeys(cmd *command) (first, last int64) {
	switch cmd.keys {
	case keyFirst:
		return 1, 1
	case keysAll:
		return 1, -1
	}
	return 0, 0
}

// configValues are the settings that tools read on connect; redlockd
// keeps nothing on disk, hence no snapshots and no append-only file.
var configValues = map[string]string{
	"save":       "",
	"appendonly": "no",
	"databases":  strconv.Itoa(quorum.DBs), // SELECT 0 to 15
	"maxmemory":  "0",
}

// cmdConfig: CONFIG GET pattern […] answers pairs; other subcommands are
// accepted only where they are harmless.
func (h *Handler) cmdConfig(c *call) {
	switch sub := strings.ToUpper(c.arg(0)); {
	case sub == "GET" && len(c.args) >= 2:
		h.configGet(c)
	case sub == "RESETSTAT" && len(c.args) == 1:
		c.w.WriteSimple("OK")
	case sub == "SET" || sub == "REWRITE":
		c.w.WriteError("ERR redlockd is configured by flags, environment or its config file, not CONFIG " + sub)
	case sub == "GET":
		c.w.WriteError(errArity("config|get"))
	default:
		c.w.WriteError(errUnknownSub(c.arg(0), "CONFIG"))
	}
}

func (h *Handler) configGet(c *call) {
	var keys []string
	for _, pat := range strs(c.args[1:]) {
		for k := range configValues {
			if glob.Match(strings.ToLower(pat), k) && !contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	c.w.WriteMap(len(keys))
	for _, k := range keys {
		c.w.WriteBulkString(k)
		c.w.WriteBulkString(configValues[k])
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// dbsizeScript counts the keys of the script's database on one backend.
var dbsizeScript = &quorum.Script{Src: "return redis.call('DBSIZE')"}

// keyspaceScript counts the keys of every database on one backend: an
// array of quorum.DBs counts, database 0 first.
var keyspaceScript = &quorum.Script{Src: "local n = {} for db = 0, " + strconv.Itoa(quorum.DBs-1) +
	" do redis.call('SELECT', db) n[#n+1] = redis.call('DBSIZE') end return n"}

func init() {
	dbsizeScript.SHA = sha1Hex(dbsizeScript.Src)
	keyspaceScript.SHA = sha1Hex(keyspaceScript.Src)
}

// cmdDBSize: DBSIZE -> the keys of the connection's database as the
// backends count them, in one round: the count a majority gave, or where
// the counts differ, the smallest (Eval's reply rule for integers). The
// count includes redlockd's own keys there (fence counters, hold counts,
// lock horizons: all with a ttl).
func (h *Handler) cmdDBSize(c *call) {
	res, err := h.clusterOf(c.s).Eval(c.s.Context(), dbsizeScript, nil, nil, false)
	v := res.Value
	switch {
	case err != nil:
		writeLockError(c.w, c.name, err)
	case v.Kind == quorum.IntValue:
		c.w.WriteInt(v.Int)
	case v.Kind == quorum.ErrorValue:
		c.w.WriteError(v.Str)
	default:
		c.w.WriteError("ERR backends gave no key count")
	}
}

// keyspace is the keys per database as the backends count them (see
// cmdDBSize), nil when too few answered.
func (h *Handler) keyspace(s *Session) []int64 {
	res, err := h.cluster.Eval(s.Context(), keyspaceScript, nil, nil, false)
	v := res.Value
	if err != nil || v.Kind != quorum.ArrayValue {
		return nil
	}
	out := make([]int64, len(v.Elems))
	for i, e := range v.Elems {
		out[i] = e.Int
	}
	return out
}

// cmdScan: SCAN cursor [MATCH p] [COUNT n] [TYPE t] -> an empty last page.
// A key is a lock only where a majority holds it, which no backend's own
// listing says; redlockd does not list keys (LOCKINFO inspects one).
// Tools that walk the keyspace (redis-cli --bigkeys, --scan) then finish
// at once instead of failing.
func (h *Handler) cmdScan(c *call) {
	if _, err := strconv.ParseUint(c.arg(0), 10, 64); err != nil {
		c.w.WriteError("ERR invalid cursor")
		return
	}
	c.w.WriteArray(2)
	c.w.WriteBulkString("0")
	c.w.WriteArray(0)
}
