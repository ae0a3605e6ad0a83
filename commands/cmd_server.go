package commands

import (
	"sort"
	"strings"

	"github.com/redlockd/redlockd/internal/glob"
)

func init() {
	register(
		&command{name: "command", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdCommand},
		&command{name: "config", arity: -2, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdConfig},
		&command{name: "info", arity: -1, pipe: pipeBarrier, outcome: outcomePlain, run: (*Handler).cmdInfo},
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
	"databases":  "1",
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
